// CPU twin of the linear layer: OpenBLAS sgemm with the transposes folded into the call (no copies).
#pragma once

namespace gptrain::cpu {

// Row-major C (M, N) = alpha * op(A) op(B) + beta * C, op(X) = X or X^T, split over blocks of the
// longer of M and N across the OpenMP threads (BLAS itself single-threaded). Strides lda/ldb/ldc allow
// strided views.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC, int OC);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int IC, int OC, bool accumulate_dinp);

}  // namespace gptrain::cpu
