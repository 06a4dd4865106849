// GELU (tanh approximation, as GPT-2 / Megatron's fused bias-GELU, and the exact erf form) and SwiGLU,
// value and derivative per element, shared by the CPU twin and the CUDA kernels.
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

constexpr float kGeluTanhC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluTanhA = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1 / sqrt(2 pi)

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
GPTRAIN_HD inline float gelu_tanh(float x) {
  const float u = kGeluTanhC * (x + kGeluTanhA * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

GPTRAIN_HD inline float gelu_tanh_grad(float x) {
  const float u = kGeluTanhC * (x + kGeluTanhA * x * x * x);
  const float t = tanhf(u);
  const float du = kGeluTanhC * (1.0f + 3.0f * kGeluTanhA * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// 0.5 x (1 + erf(x / sqrt 2))
GPTRAIN_HD inline float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }

GPTRAIN_HD inline float gelu_erf_grad(float x) {
  return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
}

GPTRAIN_HD inline float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

// SwiGLU per element: out = silu(gate) * up, silu(g) = g * sigmoid(g).
GPTRAIN_HD inline float swiglu(float gate, float up) { return gate * sigmoidf_(gate) * up; }

// d/dgate and d/dup of swiglu, times dout.
GPTRAIN_HD inline void swiglu_grad(float gate, float up, float dout, float* dgate, float* dup) {
  const float s = sigmoidf_(gate);
  const float silu = gate * s;
  *dgate = dout * up * s * (1.0f + gate * (1.0f - s));
  *dup = dout * silu;
}

}  // namespace gptrain
