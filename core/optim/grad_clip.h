// Global gradient-norm clipping, Megatron's (and torch.nn.utils.clip_grad_norm_'s) rule:
// coefficient = max_norm / (norm + 1e-6), applied only when it is < 1. The optimizer folds it into its
// gradient scale instead of rewriting the gradients.
#pragma once

namespace gptrain {

// norm: the global L2 norm of the unscaled gradients; max_norm 0 disables clipping.
inline double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double c = max_norm / (norm + 1e-6);
  return c < 1.0 ? c : 1.0;
}

}  // namespace gptrain
