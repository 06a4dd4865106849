// LayerNorm / RMSNorm maths shared by the twins. Row statistics are computed in fp32 (mean, then the
// variance as the mean of squared deviations: two passes, no E[x^2]-E[x]^2 cancellation).
//   LayerNorm: xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps), y = xhat * w + b
//   RMSNorm:   xhat = x * rstd,          rstd = 1/sqrt(mean(x^2) + eps), y = xhat * w
// Backward per row with g = dy * w:
//   LayerNorm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   RMSNorm:   dx = rstd * (g - xhat * mean(g * xhat))
// dw += dy * xhat, db += dy (parameter grads accumulate, per the Backend convention).
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

GPTRAIN_HD inline float norm_rstd(float mean_sq_dev, float eps) { return 1.0f / sqrtf(mean_sq_dev + eps); }

// dx for one element given the row means of g and g*xhat (mean_g = 0 for RMSNorm).
GPTRAIN_HD inline float norm_dx(float g, float xhat, float rstd, float mean_g, float mean_gxhat) {
  return rstd * (g - mean_g - xhat * mean_gxhat);
}

}  // namespace gptrain
