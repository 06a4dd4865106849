// LayerNorm / RMSNorm maths shared by the twins. Row statistics are computed in fp32 (mean, then the
// variance as the mean of squared deviations: two passes, no E[x^2]-E[x]^2 cancellation).
//   LayerNorm: xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps), y = xhat * w + b
//   RMSNorm:   xhat = x * rstd,          rstd = 1/sqrt(mean(x^2) + eps), y = xhat * w
// Backward per row with g = dy * w:
//   LayerNorm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   RMSNorm:   dx = rstd * (g - xhat * mean(g * xhat))
// dw += dy * xhat, db += dy (parameter grads accumulate, per the Backend convention).
// Zero-centred gamma (Megatron's --apply-layernorm-1p): the stored weight w is gamma - 1, so the norm
// multiplies by (1 + w); dgamma/dw = 1, so dw is the same dy * xhat.
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

// The scale a stored norm weight stands for: w itself, or 1 + w with zero-centred gamma (computed in
// fp32, so a bf16/fp16 w keeps its precision near 0).
GPTRAIN_HD inline float norm_gamma(float w, bool zero_centered_gamma) { return zero_centered_gamma ? 1.0f + w : w; }

GPTRAIN_HD inline float norm_rstd(float mean_sq_dev, float eps) { return 1.0f / sqrtf(mean_sq_dev + eps); }

// dx for one element given the row means of g and g*xhat (mean_g = 0 for RMSNorm).
GPTRAIN_HD inline float norm_dx(float g, float xhat, float rstd, float mean_g, float mean_gxhat) {
  return rstd * (g - mean_g - xhat * mean_gxhat);
}

}  // namespace gptrain
