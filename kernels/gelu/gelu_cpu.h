// CPU twins of GELU (tanh / erf) and SwiGLU (maths in gelu_math.h).
#pragma once

#include <cstddef>

#include "kernels/backend.h"

namespace gptrain::cpu {

void gelu_forward(float* out, const float* inp, std::size_t n, GeluKind kind);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n, GeluKind kind);
void swiglu_forward(float* out, const float* inp, int N, int F);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F);

}  // namespace gptrain::cpu
