// Fused SGD on CPU: one pass over (master, grad, momentum buffer).
#include "kernels/sgd/sgd.h"

#include "kernels/common/cpu_parallel.h"
#include "kernels/sgd/sgd_math.h"

namespace gptrain::cpu {

void sgd_update(float* master, float* model_param, const float* grad, float* momentum_buf, std::size_t n, float lr,
                float momentum, float weight_decay, float grad_scale) {
  const SgdCoeffs c{lr, momentum, weight_decay, grad_scale};
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) {
    sgd_element(&master[i], &momentum_buf[i], grad[i], c);
    if (model_param != nullptr) model_param[i] = master[i];
  }
}

}  // namespace gptrain::cpu
