// GELU (tanh approximation, as GPT-2 / Megatron's fused bias-GELU, and the exact erf form), SwiGLU and GeGLU,
// value and derivative per element, shared by the CPU twin and the CUDA kernels.
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

constexpr float kGeluTanhC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluTanhA = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1 / sqrt(2 pi)

// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated as x * sigmoid(2u) = x / (1 + e),
// e = exp(-2u): the same function, one exponential instead of tanh (cheap and vectorisable on CPU,
// __expf-friendly on GPU). The *_from_exp forms take e so a twin can supply its own vector exp.
GPTRAIN_HD inline float gelu_tanh_exp_arg(float x) { return -2.0f * kGeluTanhC * (x + kGeluTanhA * x * x * x); }

GPTRAIN_HD inline float gelu_tanh_from_exp(float x, float e) { return x / (1.0f + e); }

// d/dx: s + x s (1 - s) 2 du/dx with s = sigmoid(2u) = 1 / (1 + e); finite for e = +inf.
GPTRAIN_HD inline float gelu_tanh_grad_from_exp(float x, float e) {
  const float s = 1.0f / (1.0f + e);
  const float du2 = 2.0f * kGeluTanhC * (1.0f + 3.0f * kGeluTanhA * x * x);
  return s + x * s * (1.0f - s) * du2;
}

GPTRAIN_HD inline float gelu_tanh(float x) { return gelu_tanh_from_exp(x, expf(gelu_tanh_exp_arg(x))); }

GPTRAIN_HD inline float gelu_tanh_grad(float x) { return gelu_tanh_grad_from_exp(x, expf(gelu_tanh_exp_arg(x))); }

// 0.5 x (1 + erf(x / sqrt 2)); the *_from forms take erf(x / sqrt 2) (and exp(-x^2 / 2)) from the caller.
GPTRAIN_HD inline float gelu_erf_from(float x, float erf_x) { return 0.5f * x * (1.0f + erf_x); }

GPTRAIN_HD inline float gelu_erf_grad_from(float x, float erf_x, float exp_half_x2) {
  return 0.5f * (1.0f + erf_x) + x * kInvSqrt2Pi * exp_half_x2;
}

GPTRAIN_HD inline float gelu_erf(float x) { return gelu_erf_from(x, erff(x * kInvSqrt2)); }

GPTRAIN_HD inline float gelu_erf_grad(float x) {
  return gelu_erf_grad_from(x, erff(x * kInvSqrt2), expf(-0.5f * x * x));
}

// SwiGLU per element: out = silu(gate) * up, silu(g) = g * sigmoid(g) = g / (1 + e), e = exp(-gate).
GPTRAIN_HD inline float swiglu_from_exp(float gate, float up, float e) { return gate / (1.0f + e) * up; }

// d/dgate and d/dup of swiglu times dout, given e = exp(-gate).
GPTRAIN_HD inline void swiglu_grad_from_exp(float gate, float up, float dout, float e, float* dgate, float* dup) {
  const float s = 1.0f / (1.0f + e);
  *dgate = dout * up * s * (1.0f + gate * (1.0f - s));
  *dup = dout * gate * s;
}

GPTRAIN_HD inline float swiglu(float gate, float up) { return swiglu_from_exp(gate, up, expf(-gate)); }

GPTRAIN_HD inline void swiglu_grad(float gate, float up, float dout, float* dgate, float* dup) {
  swiglu_grad_from_exp(gate, up, dout, expf(-gate), dgate, dup);
}

// GeGLU per element (Gemma's MLP): out = gelu(gate) * up, with either GELU form. The *_from forms take
// act = gelu(gate) and act_grad = gelu'(gate) from the caller (a twin's own vector exp / erf).
GPTRAIN_HD inline float geglu_from(float act, float up) { return act * up; }

// d/dgate and d/dup of geglu times dout.
GPTRAIN_HD inline void geglu_grad_from(float act, float act_grad, float up, float dout, float* dgate, float* dup) {
  *dgate = dout * up * act_grad;
  *dup = dout * act;
}

GPTRAIN_HD inline float geglu(float gate, float up, bool erf_form) {
  return geglu_from(erf_form ? gelu_erf(gate) : gelu_tanh(gate), up);
}

GPTRAIN_HD inline void geglu_grad(float gate, float up, float dout, bool erf_form, float* dgate, float* dup) {
  const float act = erf_form ? gelu_erf(gate) : gelu_tanh(gate);
  const float act_grad = erf_form ? gelu_erf_grad(gate) : gelu_tanh_grad(gate);
  geglu_grad_from(act, act_grad, up, dout, dgate, dup);
}

}  // namespace gptrain
