#include "core/hf/family.h"

namespace gptrain::hf {

std::string default_family(const ModelConfig& c) {
  const bool qkv_only_bias = c.add_qkv_bias && !c.add_bias_linear;
  const bool llama_like = c.normalization == Normalization::RMSNorm && c.swiglu;
  // Per-head Q/K norms on Llama's layout: Qwen3 (its MoE form has no shared expert).
  if (c.qk_layernorm && llama_like && c.parallel_residual == ParallelResidual::None &&
      c.moe.shared_expert_intermediate_size == 0)
    return c.moe.enabled() ? "qwen3_moe" : "qwen3";
  if (c.moe.enabled()) {
    if (llama_like && qkv_only_bias && c.moe.shared_expert_gate) return "qwen2_moe";
    return llama_like && c.moe.shared_expert_intermediate_size == 0 ? "mixtral" : "moe";
  }
  if (c.parallel_residual == ParallelResidual::SharedNorm) return "gptj";
  if (c.parallel_residual == ParallelResidual::TwoNorms) return "gpt_neox";
  if (c.geglu || c.scale_embeddings_by_sqrt_hidden) return "gemma";
  if (c.normalization == Normalization::RMSNorm && c.swiglu && qkv_only_bias) return "qwen2";
  if (c.window_size >= 0 && c.window_attn_skip_freq == 0 && c.normalization == Normalization::RMSNorm && c.swiglu)
    return "mistral";
  if (c.normalization == Normalization::RMSNorm || c.swiglu) return "llama";
  return "gpt2";
}

std::string family_of(const checkpoint::ModelDescription& m) {
  return m.family.empty() ? default_family(m.config) : m.family;
}

}  // namespace gptrain::hf
