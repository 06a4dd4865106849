// One Lion step on one element, shared by the twins. Megatron's --optimizer lion (the emerging-optimizers
// Lion, decoupled weight decay) in its order:
//   p = p - lr * wd * p                       g = grad * grad_scale (unscale and clip folded in)
//   u = sign(beta1 * m + (1 - beta1) * g)     (sign(0) = 0, as torch.sign)
//   m = m + (1 - beta2) * (g - m)             (torch's lerp(m, g, 1 - beta2) for a weight below 0.5)
//   p = p - lr * u
#pragma once

#include "kernels/common/hd.h"

namespace gptrain {

struct LionCoeffs {
  float lr, beta1, beta2, weight_decay, grad_scale;
};

GPTRAIN_HD inline void lion_element(float* p, float* m, float grad, const LionCoeffs& c) {
  const float g = grad * c.grad_scale;
  float x = *p;
  x = x + (-c.weight_decay * c.lr) * x;
  const float mix = c.beta1 * *m + (1.0f - c.beta1) * g;
  const float u = mix > 0.0f ? 1.0f : mix < 0.0f ? -1.0f : 0.0f;
  *m = *m + (1.0f - c.beta2) * (g - *m);
  *p = x + (-c.lr) * u;
}

}  // namespace gptrain
