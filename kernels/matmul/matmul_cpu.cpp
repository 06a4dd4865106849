// Linear layer on CPU: y = x W^T + b with W (OC, IC) row-major as torch.nn.Linear. All three products
// are single sgemm calls on the original buffers (the transposes are flags, never copies):
//   out  (N, OC)  = inp (N, IC) . W^T          NoTrans x Trans
//   dinp (N, IC)  = dout (N, OC) . W           NoTrans x NoTrans
//   dW   (OC, IC) += dout^T (OC, N) . inp      Trans x NoTrans (accumulates: beta = 1)
// The bias gradient is a column sum split by column blocks (deterministic).
#include "kernels/matmul/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/cpu_parallel.h"

namespace gptrain::cpu {

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  // Split the longer output side: each thread packs all of the operand along the other side, so
  // splitting rows of a (256 x 50304) lm-head output would make every thread stream the whole weight.
  const bool split_n = N > M;
  const std::size_t side = static_cast<std::size_t>(split_n ? N : M);
  const std::size_t flops =
      2ull * static_cast<std::size_t>(M) * static_cast<std::size_t>(N) * static_cast<std::size_t>(K);
  int nt = threads_for(flops, 1u << 22);                                          // >= ~4 MFLOP per thread
  nt = std::min<int>(nt, static_cast<int>(std::max<std::size_t>(1, side / 32)));  // >= 32 rows/columns each
  if (nt <= 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    std::size_t b0, b1;
    split_range(side, nt, omp_get_thread_num(), 16, &b0, &b1);
    if (b1 > b0) {
      const int len = static_cast<int>(b1 - b0);
      if (split_n) {  // columns b0.. of op(B) and C
        const float* b = trans_b ? B + b0 * static_cast<std::size_t>(ldb) : B + b0;
        cblas_sgemm(CblasRowMajor, ta, tb, M, len, K, alpha, A, lda, b, ldb, beta, C + b0, ldc);
      } else {  // rows b0.. of op(A) and C
        const float* a = trans_a ? A + b0 : A + b0 * static_cast<std::size_t>(lda);
        cblas_sgemm(CblasRowMajor, ta, tb, len, N, K, alpha, a, lda, B, ldb, beta,
                    C + b0 * static_cast<std::size_t>(ldc), ldc);
      }
    }
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC, int OC) {
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
  if (dinp != nullptr)
    sgemm(false, false, N, IC, OC, 1.0f, dout, OC, weight, IC, accumulate_dinp ? 1.0f : 0.0f, dinp, IC);
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
