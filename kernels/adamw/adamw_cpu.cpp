// Fused AdamW on CPU: one pass over (master, grad, m, v), per-step constants computed once on the host.
#include "kernels/adamw/adamw.h"

#include "kernels/adamw/adamw_math.h"
#include "kernels/common/cpu_parallel.h"

namespace gptrain::cpu {

void adamw_update(float* master, float* model_param, const float* grad, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale) {
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) {
    adamw_element(&master[i], &m[i], &v[i], grad[i], c);
    if (model_param != nullptr) model_param[i] = master[i];
  }
}

}  // namespace gptrain::cpu
