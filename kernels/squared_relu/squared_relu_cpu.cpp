// Squared ReLU on CPU: one vectorised loop per element, in parallel over elements.
#include "kernels/squared_relu/squared_relu.h"

#include <cstdint>

#include "kernels/squared_relu/squared_relu_math.h"

namespace gptrain::cpu {

void squared_relu_forward(float* out, const float* inp, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) out[i] = squared_relu(inp[i]);
}

void squared_relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) dinp[i] = squared_relu_grad(inp[i]) * dout[i];
}

}  // namespace gptrain::cpu
