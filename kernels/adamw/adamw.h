// Fused AdamW over one contiguous range of parameters (kernels/backend.h, adamw_update): the model keeps
// parameters, gradients, master weights and moments in single contiguous buffers, so one call covers
// every tensor. Design: one pass per element reads grad, master, m, v (fp32), applies adamw_math.h's
// step and writes master, m, v and, when given, the compute-dtype model copy; the per-step constants
// (bias corrections, lr * wd) are computed once on the host.
#pragma once

#include <cstddef>

#include "kernels/adamw/adamw_math.h"
#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain {

// Calls f with a moment array (or a stochastically rounded parameter array) as its storage type (float* or
// BF16State*), for both twins' dispatch.
template <typename F>
void with_state_type(void* p, DType d, F&& f) {
  if (d == DType::BF16)
    f(static_cast<BF16State*>(p));
  else
    f(static_cast<float*>(p));
}

}  // namespace gptrain

namespace gptrain::cpu {

// model_param (nullable) receives the updated master (fp32 on CPU).
void adamw_update(float* master, float* model_param, const float* grad, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale);
// The same with the moments in mv's storage dtypes (fp32 or bf16, adamw_math.h's state_load / state_store).
void adamw_update_stored(float* master, float* model_param, const float* grad, AdamWMoments mv, std::size_t n, float lr,
                         float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale);
// Parameters that are their own master (bf16 bits for BF16, bf16 values in fp32 for F32), rounded
// stochastically (adamw_math.h, adamw_element_stochastic).
void adamw_update_stochastic(void* param, DType param_dtype, const float* grad, AdamWMoments mv, std::size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                             float grad_scale, StochasticRounding sr);
// The CPU backend's form (it computes in fp32: bf16 values held in fp32).
inline void adamw_update_stochastic(float* param, const float* grad, AdamWMoments mv, std::size_t n, float lr,
                                    float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale,
                                    StochasticRounding sr) {
  adamw_update_stochastic(param, DType::F32, grad, mv, n, lr, beta1, beta2, eps, weight_decay, step, grad_scale, sr);
}

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// adamw.cu; `t` is the dtype of model_param (nullable).
void adamw_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* m, float* v,
                  std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale);
void adamw_update_stored(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, AdamWMoments mv,
                         std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                         float grad_scale);
// `t` is the dtype of param (F32 or BF16).
void adamw_update_stochastic(cudaStream_t s, DType t, void* param, const float* grad, AdamWMoments mv, std::size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                             float grad_scale, StochasticRounding sr);

}  // namespace gptrain::cuda
