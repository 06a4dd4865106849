// The FP8 GEMM on cuBLASLt. Row-major out (M, N) is the column-major matrix out^T (N, M) = b (N, K) a^T:
// cuBLASLt's A is our b (row-major (N, K) = column-major (K, N), transposed) and its B our a (column-major
// (K, M), not transposed): the "TN" layout, the only one its FP8 kernels take. Scales go in as device
// pointers (no host round trip); accumulate is beta = 1 with C = D, which FP8 kernels allow for bf16, fp16
// and fp32 outputs. amax is taken by a separate pass over the stored output (kernels/fp8/fp8.cu abs_max):
// cuBLASLt's own amax (CUBLASLT_MATMUL_DESC_AMAX_D_POINTER) is documented for FP8 outputs and *writes* rather
// than max-es, while the op's amax is of the values as stored, in any output dtype, and max-ed like
// fp8_cast_transpose's.
// The capability check is at run time, so a build for any architecture list compiles this file.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_check.h"
#include "kernels/fp8/fp8.h"
#include "kernels/matmul/matmul_cublaslt.h"

namespace gptrain::cuda {

namespace {

cudaDataType_t fp8_type(Fp8Kind k) { return k == Fp8Kind::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

cudaDataType_t out_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

bool fp8_device(const CudaDeviceInfo& device) { return device.cc_major * 10 + device.cc_minor >= 89; }

}  // namespace

bool fp8_gemm_accepts(const CudaDeviceInfo& device, const void* out, const void* a, const void* b, int M, int N,
                      int K) {
  return fp8_device(device) && M % 16 == 0 && N % 16 == 0 && K % 16 == 0 && aligned16(out) && aligned16(a) &&
         aligned16(b);
}

void fp8_gemm(cudaStream_t s, LtGemm& gemm, const CudaDeviceInfo& device, DType out_t, void* out, const uint8_t* a,
              Fp8Kind a_kind, const float* a_scale_inv, const uint8_t* b, Fp8Kind b_kind, const float* b_scale_inv,
              int M, int N, int K, float alpha, bool accumulate, float* amax, bool fast_accum, const void* bias,
              DType bias_t) {
  check(fp8_device(device),
        "fp8_gemm (cuda backend): FP8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, Hopper, Blackwell); "
        "{} is sm_{}{}",
        device.name, device.cc_major, device.cc_minor);
  check(M % 16 == 0 && N % 16 == 0 && K % 16 == 0,
        "fp8_gemm (cuda backend): M={} N={} K={} must each be a multiple of 16 (cuBLASLt's FP8 kernels)", M, N, K);
  check(aligned16(out) && aligned16(a) && aligned16(b),
        "fp8_gemm (cuda backend): out, a and b must be 16-byte aligned (cuBLASLt's FP8 kernels); got {}, {}, {}",
        static_cast<const void*>(out), static_cast<const void*>(a), static_cast<const void*>(b));
  if (M == 0 || N == 0) return;
  // cuBLASLt's FP8 bias epilogue takes a bias of the output's type for bf16 and fp16 outputs (an fp32 output
  // wants a bf16 bias): an fp32 compute dtype's bias is added by a separate pass.
  // Should the heuristic find no epilogue kernel for a case (a bias pointer's alignment), the same pass adds it.
  bool bias_epilogue = bias != nullptr && K > 0 && out_t == bias_t && out_t != DType::F32;
  if (K == 0) {  // an empty sum: cuBLASLt is not asked
    if (!accumulate) GPTRAIN_CUDA_CHECK(cudaMemsetAsync(out, 0, std::size_t(M) * N * dtype_size(out_t), s));
  } else {
    GemmArgs g;
    g.transa = true;
    g.m = N, g.n = M, g.k = K;
    g.A = b, g.a_type = fp8_type(b_kind), g.lda = K;
    g.B = a, g.b_type = fp8_type(a_kind), g.ldb = K;
    g.D = out, g.d_type = out_type(out_t), g.ldd = N;
    g.alpha = alpha;
    g.beta = accumulate ? 1.0f : 0.0f;
    g.a_scale = b_scale_inv, g.b_scale = a_scale_inv;
    g.fast_accum = fast_accum;
    if (bias_epilogue) {
      g.bias = bias;  // (N): cuBLASLt's m, added to every column of the column-major out^T
      bias_epilogue = gemm.try_run(s, g);
      g.bias = nullptr;
    }
    if (!bias_epilogue) gemm.run(s, g);
  }
  if (bias != nullptr && !bias_epilogue) add_row_bias(s, out_t, out, bias, M, N);
  if (amax) abs_max(s, out_t, amax, out, std::size_t(M) * N);
}

}  // namespace gptrain::cuda
