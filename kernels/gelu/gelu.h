// Activations (kernels/backend.h): GELU (tanh or erf form), SwiGLU and GeGLU, forward and backward.
// Design: elementwise in fp32 with the per-element maths of gelu_math.h shared by both twins, rounded
// once to the compute dtype on store; in place is allowed (out == inp, dinp == dout), each element is
// read before it is written by the same thread. The CPU loops vectorise with cpu_exp.h's exp/erf.
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void gelu_forward(float* out, const float* inp, std::size_t n, GeluKind kind);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n, GeluKind kind);
void swiglu_forward(float* out, const float* inp, int N, int F);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F);
void geglu_forward(float* out, const float* inp, int N, int F, GeluKind kind);
void geglu_backward(float* dinp, const float* inp, const float* dout, int N, int F, GeluKind kind);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// gelu.cu
void gelu_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, GeluKind kind);
void gelu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, std::size_t n,
                   GeluKind kind);
void swiglu_forward(cudaStream_t s, DType t, void* out, const void* inp, int N, int F);
void swiglu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, int N, int F);
void geglu_forward(cudaStream_t s, DType t, void* out, const void* inp, int N, int F, GeluKind kind);
void geglu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, int N, int F,
                    GeluKind kind);

}  // namespace gptrain::cuda
