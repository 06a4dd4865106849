// Fused Lion on CPU: one pass over (master, grad, exp_avg).
#include "kernels/lion/lion.h"

#include "kernels/common/cpu_parallel.h"
#include "kernels/lion/lion_math.h"

namespace gptrain::cpu {

void lion_update(float* master, float* model_param, const float* grad, float* exp_avg, std::size_t n, float lr,
                 float beta1, float beta2, float weight_decay, float grad_scale) {
  const LionCoeffs c{lr, beta1, beta2, weight_decay, grad_scale};
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) {
    lion_element(&master[i], &exp_avg[i], grad[i], c);
    if (model_param != nullptr) model_param[i] = master[i];
  }
}

}  // namespace gptrain::cpu
