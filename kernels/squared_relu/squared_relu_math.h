// Squared ReLU (Megatron's --squared-relu MLP activation), value and derivative per element, shared by the
// CPU twin and the CUDA kernels.
#pragma once

#include "kernels/common/hd.h"

namespace gptrain {

// relu(x)^2.
GPTRAIN_HD inline float squared_relu(float x) {
  const float r = x > 0.0f ? x : 0.0f;
  return r * r;
}

// d/dx relu(x)^2 = 2 relu(x) (0 at and below 0).
GPTRAIN_HD inline float squared_relu_grad(float x) { return x > 0.0f ? 2.0f * x : 0.0f; }

}  // namespace gptrain
