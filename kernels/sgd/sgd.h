// Fused SGD with momentum over one contiguous range of parameters (kernels/backend.h, sgd_update): one
// pass per element reads grad, master and the momentum buffer (fp32), applies sgd_math.h's step and
// writes master, buffer and, when given, the compute-dtype model copy.
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

// model_param (nullable) receives the updated master (fp32 on CPU).
void sgd_update(float* master, float* model_param, const float* grad, float* momentum_buf, std::size_t n, float lr,
                float momentum, float weight_decay, float grad_scale);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// sgd.cu; `t` is the dtype of model_param (nullable).
void sgd_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* momentum_buf,
                std::size_t n, float lr, float momentum, float weight_decay, float grad_scale);

}  // namespace gptrain::cuda
