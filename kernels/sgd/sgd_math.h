// One SGD step on one element, shared by the twins. torch.optim.SGD's order (which Megatron's
// --optimizer sgd runs: L2 weight decay added to the gradient, momentum without dampening or Nesterov):
//   d = g + wd * p                 g = grad * grad_scale (unscale and clip folded in)
//   b = b * momentum + d           (torch starts b at d; from b = 0 this is the same value)
//   p = p - lr * b
#pragma once

#include "kernels/common/hd.h"

namespace gptrain {

struct SgdCoeffs {
  float lr, momentum, weight_decay, grad_scale;
};

GPTRAIN_HD inline void sgd_element(float* p, float* buf, float grad, const SgdCoeffs& c) {
  const float d = grad * c.grad_scale + c.weight_decay * *p;
  const float b = *buf * c.momentum + d;
  *p = *p - c.lr * b;
  *buf = b;
}

}  // namespace gptrain
