// Fused Lion over one contiguous range of parameters (kernels/backend.h, lion_update): one pass per element
// reads grad, master and exp_avg (fp32), applies lion_math.h's step and writes master, exp_avg and, when
// given, the compute-dtype model copy.
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

// model_param (nullable) receives the updated master (fp32 on CPU).
void lion_update(float* master, float* model_param, const float* grad, float* exp_avg, std::size_t n, float lr,
                 float beta1, float beta2, float weight_decay, float grad_scale);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// lion.cu; `t` is the dtype of model_param (nullable).
void lion_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* exp_avg,
                 std::size_t n, float lr, float beta1, float beta2, float weight_decay, float grad_scale);

}  // namespace gptrain::cuda
