// Muon's element-wise steps on CPU (muon_math.h), its fp32 GEMM (OpenBLAS through cpu::sgemm) and 2-D copy.
#include "kernels/muon/muon.h"

#include <cstring>

#include "kernels/common/cpu_parallel.h"
#include "kernels/matmul/matmul.h"
#include "kernels/muon/muon_math.h"

namespace gptrain::cpu {

void muon_momentum(float* buf, float* u, const float* grad, std::size_t n, float grad_scale, float momentum,
                   bool nesterov) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) muon_momentum_element(&buf[i], &u[i], grad[i], grad_scale, momentum, nesterov);
}

void muon_apply(float* master, float* model_param, const float* o, std::size_t n, float lr, float weight_decay,
                float scale, float extra_scale) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) {
    master[i] = muon_apply_element(master[i], o[i], lr, weight_decay, scale, extra_scale);
    if (model_param != nullptr) model_param[i] = master[i];
  }
}

void muon_scale_round(float* x, std::size_t n, float divisor, bool round_bf16) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 14))
  for (long long i = 0; i < count; ++i) x[i] = muon_scale_round_element(x[i], divisor, round_bf16);
}

void gemm_f32(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b, float alpha,
              float beta) {
  sgemm(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

void copy_2d_f32(float* dst, int dst_ld, const float* src, int src_ld, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    std::memcpy(dst + std::size_t(r) * dst_ld, src + std::size_t(r) * src_ld, std::size_t(cols) * sizeof(float));
}

}  // namespace gptrain::cpu
