// Linear layer on CPU: y = x W^T + b with W (OC, IC) row-major as torch.nn.Linear. All three products
// are single sgemm calls on the original buffers (the transposes are flags, never copies):
//   out  (N, OC)  = inp (N, IC) . W^T          NoTrans x Trans
//   dinp (N, IC)  = dout (N, OC) . W           NoTrans x NoTrans
//   dW   (OC, IC) += dout^T (OC, N) . inp      Trans x NoTrans (accumulates: beta = 1)
// The bias gradient is a column sum split by column blocks (deterministic).
#include "kernels/matmul/matmul_cpu.h"

#include <cblas.h>

#include <cstring>

#include "kernels/common/cpu_parallel.h"

namespace gptrain::cpu {

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  // Enough work per thread to amortise the split: 64 rows and ~2 MFLOP each.
  const std::size_t flops = 2ull * static_cast<std::size_t>(N) * static_cast<std::size_t>(K);
  const int nt = threads_for(static_cast<std::size_t>(M), std::max<std::size_t>(64, (1u << 21) / (flops + 1)));
  if (nt <= 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    std::size_t m0, m1;
    split_range(static_cast<std::size_t>(M), nt, omp_get_thread_num(), 16, &m0, &m1);
    if (m1 > m0) {
      // Rows m0.. of op(A): row offset in A when not transposed, column offset when transposed.
      const float* a = trans_a ? A + m0 : A + m0 * static_cast<std::size_t>(lda);
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m1 - m0), N, K, alpha, a, lda, B, ldb, beta,
                  C + m0 * static_cast<std::size_t>(ldc), ldc);
    }
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC,
                    int OC) {
  float beta = 0.0f;
  if (bias != nullptr) {
    const std::size_t row = static_cast<std::size_t>(OC) * sizeof(float);
#pragma omp parallel for schedule(static) num_threads(threads_for(N, 256))
    for (int i = 0; i < N; ++i) std::memcpy(out + static_cast<std::size_t>(i) * OC, bias, row);
    beta = 1.0f;
  }
  sgemm(false, true, N, OC, IC, 1.0f, inp, IC, weight, IC, beta, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int IC, int OC, bool accumulate_dinp) {
  if (dinp != nullptr) sgemm(false, false, N, IC, OC, 1.0f, dout, OC, weight, IC, accumulate_dinp ? 1.0f : 0.0f, dinp, IC);
  if (dweight != nullptr) sgemm(true, false, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
  if (dbias != nullptr) {
    const int nt = threads_for(static_cast<std::size_t>(OC) * N, 1 << 16);
#pragma omp parallel num_threads(nt)
    {
      std::size_t c0, c1;
      split_range(static_cast<std::size_t>(OC), nt, omp_get_thread_num(), 16, &c0, &c1);
      for (int i = 0; i < N; ++i) {
        const float* d = dout + static_cast<std::size_t>(i) * OC;
#pragma omp simd
        for (std::size_t c = c0; c < c1; ++c) dbias[c] += d[c];
      }
    }
  }
}

}  // namespace gptrain::cpu
