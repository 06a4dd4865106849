// Qwen3 <-> Qwen3ForCausalLM and Qwen3-MoE <-> Qwen3MoeForCausalLM (docs/hf-mapping.md §2.12): Llama's embeddings,
// attention, norms and output layer (llama_layout.h) with a per-head RMSNorm of the queries and keys before
// RoPE, gptrain's --qk-layernorm:
//   self_attn.q_norm.weight (head_dim) = self_attention.q_layernorm.weight
//   self_attn.k_norm.weight (head_dim) = self_attention.k_layernorm.weight
// head_dim is its own key (Qwen3-8B: 4096 / 32 = 128 = head_dim, Qwen3-0.6B: 1024 / 16 = 64 but head_dim 128).
// No attention biases (attention_bias true biases q, k, v and o but not the MLP: no gptrain switch does that).
// Qwen3-MoE's MLPs are Qwen2-MoE's per-expert layout without the shared expert (qwen_moe_layout.h).
// Refused by name: use_sliding_window true, layer_types with a sliding layer, rope_scaling, attention_bias true.
#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"
#include "core/hf/qwen_moe_layout.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

void require_qwen3_shape(const ModelConfig& c, const char* architecture) {
  ModelConfig llama_part = c;
  llama_part.qk_layernorm = false;  // the one switch Qwen3 adds to Llama's layout
  require_llama_shape(llama_part, architecture);
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("{} cannot express this model: {}", architecture, what);
  };
  need(c.qk_layernorm, "it needs the per-head Q/K norms (--qk-layernorm)");
  need(!c.add_bias_linear && !c.add_qkv_bias, "no biases (attention_bias false, and the MLP never has any)");
}

json qwen3_hf_config_common(const ModelConfig& c) {
  json j = llama_hf_config(c);
  j["rope_scaling"] = nullptr;
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  j["max_window_layers"] = c.num_layers;
  return j;
}

// The keys both architectures share, checked on import: Llama's (llama_from_hf_config) plus Qwen3's own.
ModelDescription qwen3_from_hf_config_common(const json& j, const std::string& where) {
  ModelDescription m = llama_from_hf_config(j, where);
  ModelConfig& c = m.config;
  if (cfg<bool>(j, "use_sliding_window", where, false))
    fail("{}: use_sliding_window true is not supported (gptrain's attention is full causal); set it to false", where);
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& t = j["layer_types"];
    if (!t.is_array()) fail("{}: \"layer_types\" is {}, expected a list", where, t.dump());
    for (const json& v : t)
      if (v != "full_attention")
        fail("{}: layer_types holds {}; only \"full_attention\" layers are supported", where, v.dump());
  }
  if (cfg<bool>(j, "attention_bias", where, false))
    fail("{}: attention_bias true is not supported (gptrain cannot bias q, k, v and o without the MLP)", where);
  c.add_bias_linear = false;
  c.qk_layernorm = true;
  return m;
}

// A model trained with --rotary-interleaved has its head dims in the interleaved order: the norm weights (one
// value per head dim) are permuted to half-split with the q/k rows (llama_to_hf_except_mlp).
void qk_norms_to_hf(OutList& o, const ModelConfig& c) {
  const int64_t HS = c.kv_channels;
  const bool inter = c.rotary_interleaved;
  const TensorStore* s = &o.src;
  for (int i = 0; i < c.num_layers; ++i)
    for (const char* part : {"q", "k"}) {
      const std::string from = gptrain_layer(i) + "self_attention." + part + "_layernorm.weight";
      o.add(hf_layer(i) + "self_attn." + part + "_norm.weight", {HS}, [=] {
        auto w = s->read_checked(from, {HS});
        return inter ? rope_interleaved_to_half(w, 1, HS, HS, 1) : w;
      });
    }
}

void qk_norms_from_hf(OutList& o, const ModelConfig& c) {
  const int64_t HS = c.kv_channels;
  for (int i = 0; i < c.num_layers; ++i) {
    o.copy(gptrain_layer(i) + "self_attention.q_layernorm.weight", hf_layer(i) + "self_attn.q_norm.weight", {HS});
    o.copy(gptrain_layer(i) + "self_attention.k_layernorm.weight", hf_layer(i) + "self_attn.k_norm.weight", {HS});
  }
}

class Qwen3Adapter final : public LlamaLayoutAdapter {
 public:
  const char* family() const override { return "qwen3"; }
  const char* model_type() const override { return "qwen3"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_qwen3_shape(c, "Qwen3ForCausalLM");
    if (c.moe.enabled()) fail("Qwen3ForCausalLM cannot express this model: it has MoE layers (use qwen3_moe)");
    json j = qwen3_hf_config_common(c);
    j["architectures"] = {"Qwen3ForCausalLM"};
    j["model_type"] = "qwen3";
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_qwen3_shape(c, "Qwen3ForCausalLM");
    OutList o{ck, llama_dense_to_hf(c, ck)};
    qk_norms_to_hf(o, c);
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m = qwen3_from_hf_config_common(j, where);
    m.family = "qwen3";
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    OutList o{hf, llama_dense_from_hf(m.config, hf)};
    qk_norms_from_hf(o, m.config);
    return std::move(o.out);
  }
};

class Qwen3MoeAdapter final : public LlamaLayoutAdapter {
 public:
  const char* family() const override { return "qwen3_moe"; }
  const char* model_type() const override { return "qwen3_moe"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_qwen3_moe(c);
    json j = qwen3_hf_config_common(c);
    j["architectures"] = {"Qwen3MoeForCausalLM"};
    j["model_type"] = "qwen3_moe";
    qwen_moe_hf_config(c, j);
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_qwen3_moe(c);
    OutList o{ck, {}};
    llama_to_hf_except_mlp(o, c);
    qk_norms_to_hf(o, c);
    for (int i = 0; i < c.num_layers; ++i) qwen_moe_mlp_to_hf(o, c, i);
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m = qwen3_from_hf_config_common(j, where);
    m.family = "qwen3_moe";
    qwen_moe_from_hf_config(j, where, m.config);
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    OutList o{hf, {}};
    llama_from_hf_except_mlp(o, c);
    qk_norms_from_hf(o, c);
    for (int i = 0; i < c.num_layers; ++i) qwen_moe_mlp_from_hf(o, c, i);
    return std::move(o.out);
  }

 private:
  static void require_qwen3_moe(const ModelConfig& c) {
    require_qwen3_shape(c, "Qwen3MoeForCausalLM");
    require_qwen_moe_shape(c, "Qwen3MoeForCausalLM");
    if (c.moe.shared_expert_intermediate_size != 0)
      fail("Qwen3MoeForCausalLM cannot express this model: it has no shared expert");
  }
};

}  // namespace

const Adapter& qwen3_adapter() {
  static const Qwen3Adapter a;
  return a;
}

const Adapter& qwen3_moe_adapter() {
  static const Qwen3MoeAdapter a;
  return a;
}

}  // namespace gptrain::hf
