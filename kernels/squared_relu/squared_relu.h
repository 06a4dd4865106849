// Squared ReLU (kernels/backend.h), forward and backward: elementwise in fp32 with squared_relu_math.h's
// maths, rounded once to the compute dtype on store; in place is allowed (out == inp, dinp == dout).
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void squared_relu_forward(float* out, const float* inp, std::size_t n);
void squared_relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// squared_relu.cu
void squared_relu_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n);
void squared_relu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, std::size_t n);

}  // namespace gptrain::cuda
