// Qwen2 / Qwen2.5 <-> Qwen2ForCausalLM (docs/hf-mapping.md §2.8): Llama's embeddings, attention, norms and
// SwiGLU MLP (llama_layout.h: a dense Llama-layout model) with q/k/v biases and no other
// bias: gptrain's --add-qkv-bias --disable-bias-linear. Embeddings are tied in the small models (0.5B-3B)
// and untied from 7B up (tie_word_embeddings). Sliding-window attention (use_sliding_window, which Qwen2
// applies to the layers from max_window_layers on) is not implemented and is refused.
#include "core/hf/qwen2_layout.h"

namespace gptrain::hf {

using checkpoint::ModelDescription;
using nlohmann::json;

void require_qwen2_shape(const ModelConfig& c, const char* architecture) {
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("{} cannot express this model: {}", architecture, what);
  };
  need(c.add_qkv_bias && !c.add_bias_linear,
       "it has q/k/v biases and no other bias (--add-qkv-bias --disable-bias-linear)");
  ModelConfig rest = c;  // Llama's other requirements; Llama itself has no qkv-only bias
  rest.add_qkv_bias = false;
  require_llama_shape(rest, architecture);
  need(c.kv_channels * c.num_attention_heads == c.hidden_size,
       "kv_channels must be hidden_size / num_attention_heads (transformers 4.46 derives it)");
}

json qwen2_hf_config(const ModelConfig& c) {
  json j = llama_hf_config(c);
  j.erase("head_dim");  // Qwen2's config has none (hidden_size / num_attention_heads)
  j["rope_scaling"] = nullptr;
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  j["max_window_layers"] = c.num_layers;
  return j;
}

ModelDescription qwen2_from_hf_config(const json& j, const std::string& where) {
  if (cfg<bool>(j, "use_sliding_window", where, false))
    fail(
        "{}: use_sliding_window true is not supported (Qwen2 applies a sliding window of \"sliding_window\" "
        "tokens to the layers from \"max_window_layers\" on; gptrain's attention is full causal in every layer)",
        where);
  ModelDescription m = llama_from_hf_config(j, where);
  ModelConfig& c = m.config;
  if (c.kv_channels * c.num_attention_heads != c.hidden_size)
    fail("{}: \"head_dim\" {} is not hidden_size / num_attention_heads = {} (Qwen2 derives the head size)", where,
         c.kv_channels, c.hidden_size / std::max(c.num_attention_heads, 1));
  c.add_bias_linear = false;
  c.add_qkv_bias = true;
  return m;
}

namespace {

class Qwen2Adapter final : public LlamaDenseAdapter {
 public:
  const char* family() const override { return "qwen2"; }
  const char* model_type() const override { return "qwen2"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_qwen2_shape(c, "Qwen2ForCausalLM");
    if (c.moe.enabled()) fail("Qwen2ForCausalLM cannot express this model: it has MoE layers (use qwen2_moe)");
    json j = qwen2_hf_config(c);
    j["architectures"] = {"Qwen2ForCausalLM"};
    j["model_type"] = "qwen2";
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_qwen2_shape(c, "Qwen2ForCausalLM");
    return llama_dense_to_hf(c, ck);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m = qwen2_from_hf_config(j, where);
    m.family = "qwen2";
    return m;
  }
};

}  // namespace

const Adapter& qwen2_adapter() {
  static const Qwen2Adapter a;
  return a;
}

}  // namespace gptrain::hf
