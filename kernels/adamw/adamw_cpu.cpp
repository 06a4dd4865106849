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

namespace {

template <typename M, typename V>
void adamw_stored_loop(float* master, float* model_param, const float* grad, M* m, V* v, std::size_t n,
                       const AdamWCoeffs& c) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) {
    adamw_element_stored(&master[i], &m[i], &v[i], grad[i], c);
    if (model_param != nullptr) model_param[i] = master[i];
  }
}

template <typename P, typename M, typename V>
void adamw_stochastic_loop(P* param, const float* grad, M* m, V* v, std::size_t n, const AdamWCoeffs& c, int step,
                           const StochasticRounding& sr) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 12))
  for (long long i = 0; i < count; ++i) {
    const uint64_t j = sr_global_index(sr.first + uint64_t(i), sr.base, sr.chunk_local, sr.chunk_global);
    adamw_element_stochastic(&param[i], &m[i], &v[i], grad[i], c,
                             sr_random_bits(sr.seed, sr.tensor_key, static_cast<uint32_t>(step), j));
  }
}

}  // namespace

void adamw_update_stochastic(void* param, DType param_dtype, const float* grad, AdamWMoments mv, std::size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                             float grad_scale, StochasticRounding sr) {
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  with_state_type(param, param_dtype, [&](auto* p) {
    with_state_type(mv.m, mv.m_dtype, [&](auto* m) {
      with_state_type(mv.v, mv.v_dtype, [&](auto* v) { adamw_stochastic_loop(p, grad, m, v, n, c, step, sr); });
    });
  });
}

void adamw_update_stored(float* master, float* model_param, const float* grad, AdamWMoments mv, std::size_t n, float lr,
                         float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale) {
  const AdamWCoeffs c = adamw_coeffs(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  with_state_type(mv.m, mv.m_dtype, [&](auto* m) {
    with_state_type(mv.v, mv.v_dtype, [&](auto* v) { adamw_stored_loop(master, model_param, grad, m, v, n, c); });
  });
}

}  // namespace gptrain::cpu
