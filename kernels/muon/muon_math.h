// Muon's element-wise steps, shared by the twins (the Newton-Schulz GEMMs between them are gemm_f32).
// Megatron's Muon (its emerging-optimizers OrthogonalizedOptimizer, torch order) per 2-D weight:
//   g   = grad * grad_scale                                      (unscale and clip folded in)
//   buf = buf + (1 - momentum) * (g - buf)                        (torch's lerp toward g)
//   u   = nesterov ? lerp(g, buf, momentum) : buf                (the matrix orthogonalized)
//   p   = p + (-lr * wd) * p                                      (decoupled decay, before the update)
//   p   = p + (-lr) * ((O * scale) * extra_scale)                 O = Newton-Schulz(u)
// lerp(a, b, w) is torch's two-sided form: a + w * (b - a) for w < 0.5, else b - (b - a) * (1 - w).
#pragma once

#include "kernels/common/dtype_math.h"
#include "kernels/common/hd.h"

namespace gptrain {

GPTRAIN_HD inline float torch_lerp(float a, float b, float w) {
  return w < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}

// The momentum buffer's update and the matrix Newton-Schulz orthogonalizes (u).
GPTRAIN_HD inline void muon_momentum_element(float* buf, float* u, float grad, float grad_scale, float momentum,
                                             bool nesterov) {
  const float g = grad * grad_scale;
  const float b = torch_lerp(*buf, g, 1.0f - momentum);
  *buf = b;
  *u = nesterov ? torch_lerp(g, b, momentum) : b;
}

// The weight update from the orthogonalized matrix o.
GPTRAIN_HD inline float muon_apply_element(float p, float o, float lr, float weight_decay, float scale,
                                           float extra_scale) {
  const float decayed = p + (-lr * weight_decay) * p;
  return decayed + (-lr) * ((o * scale) * extra_scale);
}

// x / divisor, rounded to bf16 when asked (the Newton-Schulz iteration in bf16, --muon-fp32-matmul-prec medium).
GPTRAIN_HD inline float muon_scale_round_element(float x, float divisor, bool round_bf16) {
  const float y = x / divisor;
  return round_bf16 ? bf16_to_f32(f32_to_bf16(y)) : y;
}

}  // namespace gptrain
