// Fused Lion on CUDA: one launch over a contiguous range; per element kernels/lion/lion_math.h's step on the
// fp32 master and exp_avg, and the compute-dtype model copy in the same pass.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/lion/lion.h"
#include "kernels/lion/lion_math.h"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void lion_kernel(float* master, T* model_param, const float* grad, float* exp_avg, std::size_t n,
                            LionCoeffs c) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float p = master[i], m = exp_avg[i];
    lion_element(&p, &m, grad[i], c);
    master[i] = p;
    exp_avg[i] = m;
    if (model_param) model_param[i] = from_f32<T>(p);
  }
}

}  // namespace

void lion_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* exp_avg,
                 std::size_t n, float lr, float beta1, float beta2, float weight_decay, float grad_scale) {
  if (n == 0) return;
  const LionCoeffs c{lr, beta1, beta2, weight_decay, grad_scale};
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    lion_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(master, static_cast<T*>(model_param), grad, exp_avg, n, c);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
