// Fused SGD with momentum on CUDA: one launch over a contiguous range; per element kernels/sgd/sgd_math.h's
// step on the fp32 master and momentum buffer, and the compute-dtype model copy in the same pass.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/sgd/sgd.h"
#include "kernels/sgd/sgd_math.h"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void sgd_kernel(float* master, T* model_param, const float* grad, float* buf, std::size_t n, SgdCoeffs c) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float p = master[i], b = buf[i];
    sgd_element(&p, &b, grad[i], c);
    master[i] = p;
    buf[i] = b;
    if (model_param) model_param[i] = from_f32<T>(p);
  }
}

}  // namespace

void sgd_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* momentum_buf,
                std::size_t n, float lr, float momentum, float weight_decay, float grad_scale) {
  if (n == 0) return;
  const SgdCoeffs c{lr, momentum, weight_decay, grad_scale};
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(master, static_cast<T*>(model_param), grad, momentum_buf, n, c);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
