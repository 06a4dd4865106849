// GEMMs through cuBLASLt: one handle, one 32 MiB workspace, and the heuristic's algorithm cached per
// shape/layout/dtype/alignment key, so steady-state training makes no heuristic queries.
// All matrices are column-major in cuBLAS terms; the backend maps row-major (N, C) tensors onto them.
// Epilogues: bias, and GELU with its auxiliary pre-activation matrix (forward GELU_AUX[_BIAS], backward
// DGELU). cuBLASLt's GELU is the tanh approximation, so only GeluKind::Tanh may use these.
// FP8 operands (CUDA_R_8F_E4M3 / E5M2, kernels/fp8/fp8_gemm_cuda.cpp) come with their fp32 scale factors as
// device pointers and may turn off the periodic fp32 promotion of partial sums (fast_accum).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace gptrain::cuda {

enum class GemmEpilogue : uint8_t {
  Default,  // D = alpha op(A) op(B) + beta D (+ bias)
  GeluAux,  // aux = alpha op(A) op(B) (+ bias), D = gelu_tanh(aux)
  DGelu,    // D = gelu_tanh'(aux) * (alpha op(A) op(B)); aux is read (the forward's pre-activation)
};

struct GemmArgs {
  bool transa = false, transb = false;
  int m = 0, n = 0, k = 0;  // D is m x n, op(A) m x k, op(B) k x n
  const void* A = nullptr;
  cudaDataType_t a_type = CUDA_R_32F;
  int lda = 0;
  const void* B = nullptr;
  cudaDataType_t b_type = CUDA_R_32F;
  int ldb = 0;
  void* D = nullptr;  // C aliases D (beta != 0 accumulates into D)
  cudaDataType_t d_type = CUDA_R_32F;
  int ldd = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  const void* bias = nullptr;  // (m) in d_type, added to every column (epilogue); nullable
  GemmEpilogue epilogue = GemmEpilogue::Default;
  void* aux = nullptr;             // GeluAux / DGelu: m x n in d_type, leading dimension aux_ld
  int aux_ld = 0;                  // cuBLASLt requires a multiple of 8, >= m
  const float* a_scale = nullptr;  // FP8: device fp32 factor applied to A (null: 1)
  const float* b_scale = nullptr;  // FP8: device fp32 factor applied to B (null: 1)
  bool fast_accum = false;         // FP8: CUBLASLT_MATMUL_DESC_FAST_ACCUM
};

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Deterministic mode excludes algorithms whose split-K reduction accumulates in place (atomics).
  void set_deterministic(bool on) { deterministic_ = on; }
  // D = alpha op(A) op(B) + beta D (+ bias), fp32 accumulation and scaling; fails (Error) when
  // cuBLASLt has no algorithm for the case.
  void run(cudaStream_t stream, const GemmArgs& g);
  // As run(), but returns false (and enqueues nothing) when cuBLASLt has no algorithm for the case,
  // so that a fused epilogue can fall back to separate kernels. The answer is cached per key.
  bool try_run(cudaStream_t stream, const GemmArgs& g);
  std::size_t cached_plans() const { return plans_.size(); }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;  // the heuristic found an algorithm
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  };
  using Key = std::tuple<bool, bool, int, int, int, int, int, int, int, int, int, bool, bool, int, bool, int, int, int,
                         bool, bool>;
  Plan& plan_for(const GemmArgs& g);
  void launch(cudaStream_t stream, Plan& p, const GemmArgs& g);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  bool deterministic_ = false;
  std::map<Key, Plan> plans_;
};

}  // namespace gptrain::cuda
