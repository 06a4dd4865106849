// The linear layer y = x W^T + b (W (out, in) row-major, as torch.nn.Linear) and its fusion with GELU
// (kernels/backend.h: matmul_forward/backward, matmul_bias_gelu_forward, matmul_dgelu_backward).
// Design: every product is one GEMM on the original buffers, the transposes folded into the call
// (OpenBLAS sgemm split across the OpenMP threads on CPU; cuBLASLt on CUDA, matmul_cublaslt.h, with
// fp32 main-grad accumulation from bf16/fp16 inputs). The bias gradient is a fixed-order column sum
// (deterministic, no atomics). Linear + GELU on CPU is the composition itself (GEMM, then the GELU twin:
// the same bits as the unfused ops); on CUDA it may be a cuBLASLt GELU epilogue.
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cpu {

// Row-major C (M, N) = alpha * op(A) op(B) + beta * C, op(X) = X or X^T, split over blocks of the
// longer of M and N across the OpenMP threads (BLAS itself single-threaded). Strides lda/ldb/ldc allow
// strided views.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc);

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC, int OC);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int IC, int OC, bool accumulate_dinp);

// matmul_gelu_cpu.cpp: the GEMM through OpenBLAS, then the GELU twin over its output.
void matmul_bias_gelu_forward(float* out, float* pre_gelu, const float* inp, const float* weight, const float* bias,
                              int N, int IC, int OC, GeluKind kind);
void matmul_dgelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* inp,
                           const float* pre_gelu, const float* weight, int N, int IC, int OC, GeluKind kind);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// cuBLASLt's one workspace per backend (matmul_cublaslt_cuda.cpp allocates exactly this).
inline constexpr std::size_t kCublasLtWorkspaceBytes = std::size_t(32) << 20;  // NVIDIA's advice for Hopper

// bias_grad's scratch: fp32 partial column sums over tiles of kBiasGradTileRows rows, (tiles, OC).
inline constexpr int kBiasGradTileRows = 128;
constexpr std::size_t bias_grad_scratch_bytes(std::size_t N, std::size_t OC) {
  return carve_bytes<float>(ceil_div(N, kBiasGradTileRows) * OC);
}

// matmul.cu; the GEMMs themselves are cuBLASLt (matmul_cublaslt_cuda.cpp).
// dbias (OC) += column sums of dout (N, OC), fixed-order two-pass reduction.
void bias_grad(cudaStream_t s, DType t, Workspace& ws, float* dbias, const void* dout, int N, int OC);

}  // namespace gptrain::cuda
