// Mixtral <-> MixtralForCausalLM: Llama's embeddings, attention and norms (llama_layout.h) with a sparse MoE
// block in every layer.
//   - block_sparse_moe.gate.weight (E, C) = mlp.router.weight;
//   - experts.j.w1 (gate) ; w3 (up) = expert j of mlp.experts.linear_fc1.weight (E, 2F, C), rows [gate | up];
//     experts.j.w2 (down) = expert j of mlp.experts.linear_fc2.weight (E, C, F).
//   - Routing: transformers takes the softmax over all experts, keeps the top-k and renormalises them, which
//     equals the softmax over the k chosen logits: Megatron's default (no --moe-router-pre-softmax).
//   - router_aux_loss_coef: transformers' aux loss is K x Megatron's for one layer (docs/moe-ops.md §4), and it
//     pools all layers' tokens, where Megatron adds one loss per layer; the import sets --moe-aux-loss-coeff
//     to K x router_aux_loss_coef, the same gradient for a one-MoE-layer model and the per-layer analogue
//     otherwise. Exports write router_aux_loss_coef = coeff / K.
// Other HF MoE families (Qwen2-MoE: shared expert with a sigmoid gate; DeepSeek: grouped routing) are not
// served by this adapter.
#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

void require_mixtral_shape(const ModelConfig& c) {
  require_llama_shape(c, "MixtralForCausalLM");
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("MixtralForCausalLM cannot express this model: {}", what);
  };
  const MoeConfig& m = c.moe;
  need(m.enabled(), "it has no MoE layers (--num-experts)");
  need(m.num_moe_layers() == c.num_layers, "every layer must be an MoE layer (--moe-layer-freq 1)");
  need(m.score == MoeScore::Softmax && !m.pre_softmax, "the router must be softmax over the top-k logits");
  need(!m.sinkhorn(), "no Sinkhorn routing (its probabilities are a softmax over all experts)");
  need(m.num_groups == 0, "no group-limited routing (--moe-router-group-topk)");
  need(m.topk_scaling_factor == 0.0f || m.topk_scaling_factor == 1.0f, "no --moe-router-topk-scaling-factor");
  need(m.shared_expert_intermediate_size == 0, "no shared expert");
  need(!c.add_bias_linear && !c.add_qkv_bias, "no biases");
  need(c.kv_channels * c.num_attention_heads == c.hidden_size,
       "kv_channels must be hidden_size / num_attention_heads (transformers 4.46 derives it)");
}

std::string E(int i, int64_t j) { return hf_layer(i) + "block_sparse_moe.experts." + std::to_string(j) + "."; }

class MixtralAdapter final : public LlamaLayoutAdapter {
 public:
  const char* family() const override { return "mixtral"; }
  const char* model_type() const override { return "mixtral"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_mixtral_shape(c);
    json j = llama_hf_config(c);
    j["architectures"] = {"MixtralForCausalLM"};
    j["model_type"] = "mixtral";
    j["intermediate_size"] = c.moe.ffn_hidden_size;
    j["num_local_experts"] = c.moe.num_experts;
    j["num_experts_per_tok"] = c.moe.topk;
    j["router_aux_loss_coef"] = c.moe.balance_loss_on() ? c.moe.aux_loss_coeff / float(c.moe.topk) : 0.0f;
    j["output_router_logits"] = false;
    j["router_jitter_noise"] = 0.0;
    j["sliding_window"] = nullptr;
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_mixtral_shape(c);
    const int64_t C = c.hidden_size, F = c.moe.ffn_hidden_size, NE = c.moe.num_experts;
    OutList o{ck, {}};
    llama_to_hf_except_mlp(o, c);
    const TensorStore* s = &ck;
    for (int i = 0; i < c.num_layers; ++i) {
      const std::string p = gptrain_layer(i) + "mlp.";
      o.copy(hf_layer(i) + "block_sparse_moe.gate.weight", p + "router.weight", {NE, C});
      const std::string fc1 = p + "experts.linear_fc1.weight", fc2 = p + "experts.linear_fc2.weight";
      for (int64_t j = 0; j < NE; ++j) {
        // Expert j's rows of the stacked fc1 (E * 2F rows of C): gate rows first, then up rows.
        o.add(E(i, j) + "w1.weight", {F, C}, [=] {
          return row_range(s->read_checked(fc1, {NE, 2 * F, C}), j * 2 * F, F, C);
        });
        o.add(E(i, j) + "w3.weight", {F, C}, [=] {
          return row_range(s->read_checked(fc1, {NE, 2 * F, C}), j * 2 * F + F, F, C);
        });
        o.add(E(i, j) + "w2.weight", {C, F}, [=] { return row_range(s->read_checked(fc2, {NE, C, F}), j * C, C, F); });
      }
    }
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m = llama_from_hf_config(j, where);
    m.family = "mixtral";
    ModelConfig& c = m.config;
    c.add_bias_linear = false;
    if (cfg<double>(j, "router_jitter_noise", where, 0.0) != 0.0)
      fail("{}: router_jitter_noise must be 0 (gptrain's router has no jitter)", where);
    if (j.contains("sliding_window") && !j["sliding_window"].is_null())
      fail("{}: sliding_window {} is not supported (gptrain's attention is full causal); set it to null", where,
           j["sliding_window"].dump());
    MoeConfig& moe = c.moe;
    moe.num_experts = cfg_size(j, "num_local_experts", where, max_size::experts);
    moe.topk = cfg_size(j, "num_experts_per_tok", where, max_size::experts);
    moe.layer_pattern.assign(std::size_t(c.num_layers), 1);
    moe.ffn_hidden_size = c.ffn_hidden_size;
    moe.aux_loss_coeff = cfg<float>(j, "router_aux_loss_coef", where, 0.0f) * float(moe.topk);
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    const int64_t C = c.hidden_size, F = c.moe.ffn_hidden_size, NE = c.moe.num_experts;
    OutList o{hf, {}};
    llama_from_hf_except_mlp(o, c);
    const TensorStore* s = &hf;
    for (int i = 0; i < c.num_layers; ++i) {
      const std::string p = gptrain_layer(i) + "mlp.";
      o.copy(p + "router.weight", hf_layer(i) + "block_sparse_moe.gate.weight", {NE, C});
      o.add(p + "experts.linear_fc1.weight", {NE, 2 * F, C}, [=] {
        std::vector<std::vector<float>> parts;
        for (int64_t j = 0; j < NE; ++j) {
          parts.push_back(s->read_checked(E(i, j) + "w1.weight", {F, C}));
          parts.push_back(s->read_checked(E(i, j) + "w3.weight", {F, C}));
        }
        return concat(parts);
      });
      o.add(p + "experts.linear_fc2.weight", {NE, C, F}, [=] {
        std::vector<std::vector<float>> parts;
        for (int64_t j = 0; j < NE; ++j) parts.push_back(s->read_checked(E(i, j) + "w2.weight", {C, F}));
        return concat(parts);
      });
    }
    return std::move(o.out);
  }
};

}  // namespace

const Adapter& mixtral_adapter() {
  static const MixtralAdapter a;
  return a;
}

}  // namespace gptrain::hf
