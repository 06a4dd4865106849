#include "kernels/matmul/matmul_cublaslt.h"

#include <cstdint>

#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/cuda/check.h"
#include "kernels/matmul/matmul.h"

namespace gptrain::cuda {

namespace {

// Largest power of two (<= 16) dividing the address: cuBLASLt picks vectorized kernels from it.
int alignment_of(const void* p) {
  auto a = reinterpret_cast<std::uintptr_t>(p);
  int al = 16;
  while (al > 1 && (a % al) != 0) al /= 2;
  return al;
}

// FP8 scale factors are descriptor attributes like the other pointers: set before the heuristic query and
// refreshed per call. Unset (null) they stay cuBLASLt's default of 1.
void set_scale_pointers(cublasLtMatmulDesc_t desc, const GemmArgs& g) {
  if (g.a_scale)
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g.a_scale, sizeof(g.a_scale)));
  if (g.b_scale)
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g.b_scale, sizeof(g.b_scale)));
}

}  // namespace

LtGemm::LtGemm() {
  GPTRAIN_CUBLAS_CHECK(cublasLtCreate(&handle_));
  GPTRAIN_CUDA_CHECK(cudaMalloc(&workspace_, kCublasLtWorkspaceBytes));
  workspace_bytes_ = kCublasLtWorkspaceBytes;
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.d);
    cublasLtMatmulDescDestroy(p.desc);
  }
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

LtGemm::Plan& LtGemm::plan_for(const GemmArgs& g) {
  // The alignment of A, B, D is part of the key: an algorithm chosen for 16-byte aligned pointers
  // may not run on less aligned ones.
  int al = alignment_of(g.A) * 10000 + alignment_of(g.B) * 100 + alignment_of(g.D);
  Key key{g.transa,
          g.transb,
          g.m,
          g.n,
          g.k,
          g.lda,
          g.ldb,
          g.ldd,
          static_cast<int>(g.a_type) * 1000 + static_cast<int>(g.d_type),
          static_cast<int>(g.b_type),
          al,
          g.beta != 0.0f,
          g.bias != nullptr,
          alignment_of(g.bias),
          deterministic_,
          static_cast<int>(g.epilogue),
          g.aux_ld,
          alignment_of(g.aux),
          g.a_scale != nullptr || g.b_scale != nullptr,
          g.fast_accum};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;

  Plan p;
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  switch (g.epilogue) {
    case GemmEpilogue::Default: epi = g.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT; break;
    case GemmEpilogue::GeluAux: epi = g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX; break;
    case GemmEpilogue::DGelu: epi = CUBLASLT_EPILOGUE_DGELU; break;  // no bias gradient: ours is += and ordered
  }
  if (epi != CUBLASLT_EPILOGUE_DEFAULT)
    GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (g.bias) {
    int32_t bias_type = static_cast<int32_t>(g.d_type);
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  }
  if (g.epilogue != GemmEpilogue::Default) {
    // The aux matrix has D's shape and type (the default aux type for GELU); the heuristic reads the
    // pointer's alignment, so it is set before the query and refreshed per call.
    const int64_t ld = g.aux_ld;
    GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof(g.aux)));
  }
  set_scale_pointers(p.desc, g);
  if (g.fast_accum) {
    const int8_t on = 1;
    GPTRAIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof(on)));
  }
  // Stored (not op'd) shapes: op(A) is m x k, so A is k x m when transposed.
  GPTRAIN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, g.a_type, g.transa ? g.k : g.m, g.transa ? g.m : g.k, g.lda));
  GPTRAIN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, g.b_type, g.transb ? g.n : g.k, g.transb ? g.k : g.n, g.ldb));
  GPTRAIN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, g.d_type, g.m, g.n, g.ldd));

  cublasLtMatmulPreference_t pref = nullptr;
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &workspace_bytes_, sizeof(workspace_bytes_)));
  uint32_t aa = alignment_of(g.A), ab = alignment_of(g.B), ad = alignment_of(g.D);
  GPTRAIN_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof(aa)));
  GPTRAIN_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof(ab)));
  GPTRAIN_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad, sizeof(ad)));
  GPTRAIN_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof(ad)));
  if (deterministic_) {
    // Split-K partial sums reduced in place in the output depend on arrival order; the other
    // schemes reduce in a fixed order.
    uint32_t mask = CUBLASLT_REDUCTION_SCHEME_MASK & ~static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_INPLACE);
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
  p.status = st;
  if (p.ok) p.algo = result.algo;
  if (!p.ok && g.epilogue != GemmEpilogue::Default) {  // once per key: the plan (and its answer) is cached
    log::warn(
        "cuBLASLt: no algorithm for the GELU epilogue at m={} n={} k={} ({}); the plain GEMM and the GELU "
        "kernel run instead",
        g.m, g.n, g.k, cublasGetStatusString(st));
  }
  return plans_.emplace(key, p).first->second;
}

void LtGemm::launch(cudaStream_t stream, Plan& p, const GemmArgs& g) {
  // Pointers are descriptor attributes: refresh them for this call.
  if (g.bias) {
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  }
  if (g.epilogue != GemmEpilogue::Default) {
    GPTRAIN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof(g.aux)));
  }
  set_scale_pointers(p.desc, g);
  GPTRAIN_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &g.alpha, g.A, p.a, g.B, p.b, &g.beta, g.D, p.d, g.D, p.d,
                                      &p.algo, workspace_, workspace_bytes_, stream));
}

void LtGemm::run(cudaStream_t stream, const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 && g.beta == 1.0f && !g.bias && g.epilogue == GemmEpilogue::Default) return;  // nothing to add
  Plan& p = plan_for(g);
  if (!p.ok) {
    fail(
        "cuBLASLt: no algorithm for GEMM m={} n={} k={} transa={} transb={} lda={} ldb={} ldd={} types A={} B={} "
        "D={} bias={} epilogue={} ({}); expected a supported shape/dtype combination",
        g.m, g.n, g.k, g.transa, g.transb, g.lda, g.ldb, g.ldd, static_cast<int>(g.a_type), static_cast<int>(g.b_type),
        static_cast<int>(g.d_type), g.bias != nullptr, static_cast<int>(g.epilogue), cublasGetStatusString(p.status));
  }
  launch(stream, p, g);
}

bool LtGemm::try_run(cudaStream_t stream, const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return true;
  Plan& p = plan_for(g);
  if (!p.ok) return false;
  launch(stream, p, g);
  return true;
}

}  // namespace gptrain::cuda
