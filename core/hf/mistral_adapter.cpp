// Mistral <-> MistralForCausalLM (docs/hf-mapping.md, Mistral section).
//   - Llama's layout exactly (llama_layout.h; the tensors are Llama's: no biases, SwiGLU gate/up/down),
//     so the tensor maps are the Llama adapter's (a model trained --rotary-interleaved is permuted on export).
//   - sliding_window W: transformers' eager and sdpa masks let query t see keys t - W < s <= t, W keys
//     including itself, which is Megatron's --window-size (W - 1, 0). null: full causal attention. Absent:
//     MistralConfig's default, 4096.
//   - Fields transformers' Mistral reads that gptrain does not implement are refused by name; rope_scaling
//     (which transformers' Mistral ignores) is refused rather than dropped or applied.
#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"

namespace gptrain::hf {

using checkpoint::ModelDescription;
using nlohmann::json;

namespace {

// MistralConfig's sliding_window when config.json has no such key.
constexpr int kMistralDefaultSlidingWindow = 4096;

void require_mistral_shape(const ModelConfig& c) {
  ModelConfig plain = c;
  plain.window_size = -1;  // the one switch Llama's layout lacks and Mistral has
  require_llama_shape(plain, "MistralForCausalLM");
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("MistralForCausalLM cannot express this model: {}", what);
  };
  need(!c.add_bias_linear && !c.add_qkv_bias, "Mistral has no biases (train with --disable-bias-linear)");
  need(c.window_attn_skip_freq == 0,
       "--window-attn-skip-freq (full-attention layers among windowed ones): Mistral windows every layer or none");
}

// The Llama adapter's tensor maps take the model without its window (they never look at it).
ModelDescription without_window(const ModelDescription& m) {
  ModelDescription plain = m;
  plain.config.window_size = -1;
  return plain;
}

class MistralAdapter final : public LlamaLayoutAdapter {
 public:
  const char* family() const override { return "mistral"; }
  const char* model_type() const override { return "mistral"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_mistral_shape(c);
    json j = llama_hf_config(c);
    j["architectures"] = {"MistralForCausalLM"};
    j["model_type"] = "mistral";
    j["sliding_window"] = c.window_size >= 0 ? json(c.window_size + 1) : json(nullptr);
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    require_mistral_shape(m.config);
    return llama_adapter().to_hf(without_window(m), ck);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    // transformers' Mistral reads none of these; each would change the maths of a model that has it.
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
      fail(
          "{}: rope_scaling {} is not supported for model_type mistral (transformers' Mistral ignores it, so the "
          "checkpoint's maths is unclear); remove it or set it to null",
          where, j["rope_scaling"].dump());
    for (const char* key : {"attention_bias", "mlp_bias"})
      if (cfg<bool>(j, key, where, false))
        fail("{}: {} true is not supported for model_type mistral (transformers' Mistral has no biases)", where, key);
    for (const char* key : {"use_sliding_window", "max_window_layers", "layer_types"})
      if (j.contains(key))
        fail("{}: \"{}\" is not a MistralConfig field and is not supported (per-layer windows are not implemented)",
             where, key);
    ModelDescription m = llama_from_hf_config(j, where);
    m.family = "mistral";
    ModelConfig& c = m.config;
    c.add_bias_linear = false;
    if (!j.contains("sliding_window")) {
      c.window_size = kMistralDefaultSlidingWindow - 1;
    } else if (!j["sliding_window"].is_null()) {
      const int w = cfg<int>(j, "sliding_window", where);
      if (w < 1) fail("{}: sliding_window {} must be >= 1 (or null for full attention)", where, w);
      c.window_size = w - 1;  // W keys including the query's own: Megatron's (W - 1, 0)
    }
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    return llama_adapter().from_hf(without_window(m), hf);
  }
};

}  // namespace

const Adapter& mistral_adapter() {
  static const MistralAdapter a;
  return a;
}

}  // namespace gptrain::hf
