// Fused AdamW on CUDA: one launch over a contiguous parameter range (the model keeps all parameters,
// grads, master weights and moments in single contiguous buffers, so one call covers every tensor).
// Per element it reads grad, master, m, v (fp32), applies kernels/adamw/adamw_math.h's step and
// writes master, m, v and, when given, the compute-dtype model copy in the same pass.
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/adamw_math.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void adamw_kernel(float* master, T* model_param, const float* grad, float* m, float* v, std::size_t n,
                             AdamWCoeffs c) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float p = master[i], mm = m[i], vv = v[i];
    adamw_element(&p, &mm, &vv, grad[i], c);
    master[i] = p;
    m[i] = mm;
    v[i] = vv;
    if (model_param) model_param[i] = from_f32<T>(p);
  }
}

template <typename T, typename M, typename V>
__global__ void adamw_stored_kernel(float* master, T* model_param, const float* grad, M* m, V* v, std::size_t n,
                                    AdamWCoeffs c) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float p = master[i];
    adamw_element_stored(&p, &m[i], &v[i], grad[i], c);
    master[i] = p;
    if (model_param) model_param[i] = from_f32<T>(p);
  }
}

}  // namespace

void adamw_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* m, float* v,
                  std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale) {
  if (n == 0) return;
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    adamw_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(master, static_cast<T*>(model_param), grad, m, v, n, c);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda

namespace gptrain::cuda {

void adamw_update_stored(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, AdamWMoments mv,
                         std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                         float grad_scale) {
  if (n == 0) return;
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    with_state_type(mv.m, mv.m_dtype, [&](auto* m) {
      with_state_type(mv.v, mv.v_dtype, [&](auto* v) {
        adamw_stored_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(master, static_cast<T*>(model_param), grad, m, v, n, c);
      });
    });
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda

namespace gptrain::cuda {

namespace {

template <typename P, typename M, typename V>
__global__ void adamw_stochastic_kernel(P* param, const float* grad, M* m, V* v, std::size_t n, AdamWCoeffs c,
                                        uint32_t step, StochasticRounding sr) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const uint64_t j = sr_global_index(sr.first + i, sr.base, sr.chunk_local, sr.chunk_global);
    adamw_element_stochastic(&param[i], &m[i], &v[i], grad[i], c, sr_random_bits(sr.seed, sr.tensor_key, step, j));
  }
}

}  // namespace

void adamw_update_stochastic(cudaStream_t s, DType t, void* param, const float* grad, AdamWMoments mv, std::size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                             float grad_scale, StochasticRounding sr) {
  if (n == 0) return;
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  with_state_type(param, t, [&](auto* p) {
    with_state_type(mv.m, mv.m_dtype, [&](auto* m) {
      with_state_type(mv.v, mv.v_dtype, [&](auto* v) {
        adamw_stochastic_kernel<<<grid_for(n, 256), 256, 0, s>>>(p, grad, m, v, n, c, static_cast<uint32_t>(step), sr);
      });
    });
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
