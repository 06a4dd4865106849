// CPU twin of the fused AdamW update (maths in adamw_math.h).
#pragma once

#include <cstddef>

namespace gptrain::cpu {

// model_param (nullable) receives the updated master (fp32 on CPU).
void adamw_update(float* master, float* model_param, const float* grad, float* m, float* v, std::size_t n,
                  float lr, float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale);

}  // namespace gptrain::cpu
