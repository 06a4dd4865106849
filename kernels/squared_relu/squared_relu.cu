// Squared ReLU on CUDA: elementwise in fp32 with kernels/squared_relu/squared_relu_math.h's maths, one
// rounding to the compute dtype on store. In place is allowed: each element is read before it is written
// by the same thread.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/squared_relu/squared_relu.h"
#include "kernels/squared_relu/squared_relu_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 256;

template <typename T>
__global__ void squared_relu_forward_kernel(T* out, const T* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(squared_relu(to_f32(inp[i])));
}

template <typename T>
__global__ void squared_relu_backward_kernel(T* dinp, const T* inp, const T* dout, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dinp[i] = from_f32<T>(squared_relu_grad(to_f32(inp[i])) * to_f32(dout[i]));
}

}  // namespace

void squared_relu_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    squared_relu_forward_kernel<T>
        <<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(inp), n);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void squared_relu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, std::size_t n) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    squared_relu_backward_kernel<T><<<grid_for(n, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), n);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
