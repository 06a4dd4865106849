// Muon's element-wise steps on CUDA (muon_math.h): one grid-stride launch each. The Newton-Schulz GEMMs
// and the 2-D copies are the CUDA backend's gemm_f32 (cuBLASLt, fp32) and copy_2d_f32 (cudaMemcpy2DAsync).
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/muon/muon.h"
#include "kernels/muon/muon_math.h"

namespace gptrain::cuda {

namespace {

__global__ void muon_momentum_kernel(float* buf, float* u, const float* grad, std::size_t n, float grad_scale,
                                     float momentum, bool nesterov) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float b = buf[i], v = 0.0f;
    muon_momentum_element(&b, &v, grad[i], grad_scale, momentum, nesterov);
    buf[i] = b;
    u[i] = v;
  }
}

template <typename T>
__global__ void muon_apply_kernel(float* master, T* model_param, const float* o, std::size_t n, float lr,
                                  float weight_decay, float scale, float extra_scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float p = muon_apply_element(master[i], o[i], lr, weight_decay, scale, extra_scale);
    master[i] = p;
    if (model_param) model_param[i] = from_f32<T>(p);
  }
}

__global__ void muon_scale_round_kernel(float* x, std::size_t n, float divisor, bool round_bf16) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = muon_scale_round_element(x[i], divisor, round_bf16);
}

}  // namespace

void muon_momentum(cudaStream_t s, float* buf, float* u, const float* grad, std::size_t n, float grad_scale,
                   float momentum, bool nesterov) {
  if (n == 0) return;
  muon_momentum_kernel<<<grid_for(n, 256), 256, 0, s>>>(buf, u, grad, n, grad_scale, momentum, nesterov);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void muon_apply(cudaStream_t s, DType t, float* master, void* model_param, const float* o, std::size_t n, float lr,
                float weight_decay, float scale, float extra_scale) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    muon_apply_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(master, static_cast<T*>(model_param), o, n, lr, weight_decay,
                                                          scale, extra_scale);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void muon_scale_round(cudaStream_t s, float* x, std::size_t n, float divisor, bool round_bf16) {
  if (n == 0) return;
  muon_scale_round_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, n, divisor, round_bf16);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
