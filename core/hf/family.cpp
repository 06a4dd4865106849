#include "core/hf/family.h"

namespace gptrain::hf {

std::string default_family(const ModelConfig& c) {
  if (c.moe.enabled())
    return c.normalization == Normalization::RMSNorm && c.swiglu && c.moe.shared_expert_intermediate_size == 0
               ? "mixtral"
               : "moe";
  if (c.parallel_residual == ParallelResidual::SharedNorm) return "gptj";
  if (c.parallel_residual == ParallelResidual::TwoNorms) return "gpt_neox";
  if (c.geglu || c.scale_embeddings_by_sqrt_hidden) return "gemma";
  if (c.normalization == Normalization::RMSNorm || c.swiglu) return "llama";
  return "gpt2";
}

std::string family_of(const checkpoint::ModelDescription& m) {
  return m.family.empty() ? default_family(m.config) : m.family;
}

}  // namespace gptrain::hf
