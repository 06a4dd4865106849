// Gemma (the first generation) <-> GemmaForCausalLM (docs/hf-mapping.md §2.8).
//   - Llama's key layout (llama_layout.h): q/k/v/o projections into the fused qkv, half-split RoPE, the two
//     per-layer RMSNorms and the final one; no biases; head_dim independent of hidden / heads (256 in the
//     released models), MQA in the 2B one.
//   - RMSNorm scales by (1 + w) in fp32 and HF stores w. gptrain's --apply-layernorm-1p stores exactly that
//     (gamma - 1), so a 1p checkpoint takes and gives HF's norm weights unchanged, bit for bit. A checkpoint
//     without 1p stores gamma = 1 + w, the factor transformers computes in fp32 (same forward); its export
//     subtracts the 1 again (rounded: pass --apply-layernorm-1p to convert_from_hf for exact round trips).
//   - MLP down(gelu_tanh(gate(x)) * up(x)) = gptrain's --geglu (tanh GELU), fc1 rows [gate | up].
//   - The embedding output is multiplied by sqrt(hidden_size) in fp32 (--scale-embeddings-by-sqrt-hidden);
//     the output layer is the tied, unscaled table.
#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"
#include "core/hf/tensor_ops.h"
#include "core/model/param_layout.h"

namespace gptrain::hf {

using checkpoint::ModelDescription;
using nlohmann::json;

namespace {

// transformers' GemmaConfig default, taken when config.json has no head_dim.
constexpr int kGemmaDefaultHeadDim = 256;

void require_gemma_shape(const ModelConfig& c) {
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("GemmaForCausalLM cannot express this model: {}", what);
  };
  need(c.normalization == Normalization::RMSNorm, "normalization must be RMSNorm");
  need(c.position_embedding == PositionEmbedding::Rope, "position embeddings must be rope");
  need(c.rotary_percent >= 1.0f, "rotary_percent must be 1 (Gemma rotates whole heads)");
  need(c.rope_scaling.seq_len_interpolation_factor == 1.0 && !c.rope_scaling.yarn,
       "no linear or YaRN RoPE scaling (--rotary-seq-len-interpolation-factor, --position-embedding-type yarn)");
  need(!c.rope_scaling.llama3, "no Llama-3 RoPE scaling (--use-rope-scaling)");
  need(!c.qk_l2_norm, "no Q/K L2 norm (--qk-l2-norm)");
  need(c.geglu && c.gelu == GeluKind::Tanh, "the MLP must be GeGLU with the tanh GELU (--geglu)");
  need(c.scale_embeddings_by_sqrt_hidden,
       "the embeddings must be scaled by sqrt(hidden) (--scale-embeddings-by-sqrt-hidden)");
  need(c.tied_head(), "the output layer must be tied to the embeddings");
  need(!c.add_bias_linear && !c.add_qkv_bias, "no linear biases (--disable-bias-linear)");
  need(c.parallel_residual == ParallelResidual::None, "no parallel residual");
  need(!c.moe.enabled(), "no MoE layers");
}

class GemmaAdapter final : public LlamaDenseAdapter {
 public:
  const char* family() const override { return "gemma"; }
  const char* model_type() const override { return "gemma"; }
  float hf_norm_weight_offset() const override { return 1.0f; }  // HF's w = gamma - 1

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_gemma_shape(c);
    json j = llama_hf_config(c);
    j["architectures"] = {"GemmaForCausalLM"};
    j["model_type"] = "gemma";
    j["hidden_act"] = "gelu_pytorch_tanh";
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["attention_bias"] = false;
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_gemma_shape(c);
    return llama_dense_to_hf(c, ck);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    // transformers 4.46.3: hidden_activation picks the GELU; when it is null, hidden_act is ignored (a
    // legacy key) and the tanh GELU is used.
    const std::string act = cfg<std::string>(j, "hidden_activation", where, "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh" && act != "gelu_new")
      fail(
          "{}: hidden_activation \"{}\" is not supported (gptrain's Gemma MLP is GeGLU with the tanh GELU, "
          "gelu_pytorch_tanh)",
          where, act);
    if (cfg<bool>(j, "attention_bias", where, false))
      fail("{}: attention_bias true is not supported (gptrain's Gemma has no q/k/v/o biases)", where);
    json shared = j;  // Llama's keys, with Gemma's defaults where config.json leaves them out
    shared.erase("hidden_act");
    if (!j.contains("head_dim") || j["head_dim"].is_null()) shared["head_dim"] = kGemmaDefaultHeadDim;
    ModelDescription m = llama_from_hf_config(shared, where);
    m.family = "gemma";
    ModelConfig& c = m.config;
    c.swiglu = false;
    c.geglu = true;
    c.gelu = GeluKind::Tanh;
    c.scale_embeddings_by_sqrt_hidden = true;
    c.add_bias_linear = false;
    c.untie_embeddings_and_output_weights = !cfg<bool>(j, "tie_word_embeddings", where, true);
    if (c.untie_embeddings_and_output_weights)
      fail("{}: tie_word_embeddings false is not supported (Gemma's output layer is the embedding table)", where);
    return m;
  }
};

}  // namespace

const Adapter& gemma_adapter() {
  static const GemmaAdapter a;
  return a;
}

}  // namespace gptrain::hf
