#include "core/hf/family.h"

namespace gptrain::hf {

std::string default_family(const ModelConfig& c) {
  // Per-head Q/K norms on Llama's layout: Qwen3 (its MoE form has no shared expert).
  if (c.qk_layernorm && c.normalization == Normalization::RMSNorm && c.swiglu &&
      c.parallel_residual == ParallelResidual::None && c.moe.shared_expert_intermediate_size == 0)
    return c.moe.enabled() ? "qwen3_moe" : "qwen3";
  if (c.moe.enabled())
    return c.normalization == Normalization::RMSNorm && c.swiglu && c.moe.shared_expert_intermediate_size == 0
               ? "mixtral"
               : "moe";
  if (c.parallel_residual == ParallelResidual::SharedNorm) return "gptj";
  if (c.parallel_residual == ParallelResidual::TwoNorms) return "gpt_neox";
  if (c.normalization == Normalization::RMSNorm || c.swiglu) return "llama";
  return "gpt2";
}

std::string family_of(const checkpoint::ModelDescription& m) {
  return m.family.empty() ? default_family(m.config) : m.family;
}

}  // namespace gptrain::hf
