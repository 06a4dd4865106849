// FP8 ops (kernels/backend.h, fp8_cast_transpose / fp8_dequantize / fp8_gemm): the casts of FP8 training,
// with the per-tensor amax that delayed scaling records, and the GEMM on FP8 operands (fp8_gemm_cpu.cpp:
// decode, fp32 GEMM through OpenBLAS; fp8_gemm_cuda.cpp: cuBLASLt's FP8 kernels). Element maths:
// kernels/fp8/fp8_math.h.
#pragma once

#include "kernels/backend.h"
#include "kernels/fp8/fp8_math.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain {

GPTRAIN_HD inline Fp8Format fp8_format_of(Fp8Kind kind) { return kind == Fp8Kind::E4M3 ? fp8_e4m3() : fp8_e5m2(); }

}  // namespace gptrain

namespace gptrain::cpu {

void fp8_cast_transpose(uint8_t* out, uint8_t* out_t, float* amax, const float* inp, const float* scale, int R, int C,
                        Fp8Kind kind);
void fp8_dequantize(float* out, const uint8_t* inp, const float* scale_inv, std::size_t n, Fp8Kind kind);
// fp8_gemm_cpu.cpp; out is fp32 whatever out_fp32 says, fast_accum has no meaning here.
void fp8_gemm(float* out, bool out_fp32, const uint8_t* a, Fp8Kind a_kind, const float* a_scale_inv, const uint8_t* b,
              Fp8Kind b_kind, const float* b_scale_inv, int M, int N, int K, float alpha, bool accumulate, float* amax,
              bool fast_accum, const float* bias);

}  // namespace gptrain::cpu

namespace gptrain {
struct CudaDeviceInfo;
}

namespace gptrain::cuda {

class LtGemm;

// fp8.cu
void fp8_cast_transpose(cudaStream_t s, DType t, uint8_t* out, uint8_t* out_t, float* amax, const void* inp,
                        const float* scale, int R, int C, Fp8Kind kind);
void fp8_dequantize(cudaStream_t s, DType t, void* out, const uint8_t* inp, const float* scale_inv, std::size_t n,
                    Fp8Kind kind);
// amax (1) max= max |x| over n elements of dtype t, NaN excluded (fp8_gemm's output statistic).
void abs_max(cudaStream_t s, DType t, float* amax, const void* x, std::size_t n);
// out (M, N) += bias (N) on every row, both of dtype t (fp8_gemm's bias where cuBLASLt's epilogue cannot add it).
void add_row_bias(cudaStream_t s, DType t, void* out, const void* bias, int M, int N);

// fp8_gemm_cuda.cpp: the op on cuBLASLt (gemm: the backend's handle, workspace and plan cache); out is in
// out_t, bias (nullable) in the compute dtype bias_t. Throws gptrain::Error below compute capability 8.9 and
// for shapes or pointers cuBLASLt's FP8 kernels cannot take.
void fp8_gemm(cudaStream_t s, LtGemm& gemm, const CudaDeviceInfo& device, DType out_t, void* out, const uint8_t* a,
              Fp8Kind a_kind, const float* a_scale_inv, const uint8_t* b, Fp8Kind b_kind, const float* b_scale_inv,
              int M, int N, int K, float alpha, bool accumulate, float* amax, bool fast_accum, const void* bias,
              DType bias_t);
// Whether fp8_gemm takes these operands on this device (the limits it checks).
bool fp8_gemm_accepts(const CudaDeviceInfo& device, const void* out, const void* a, const void* b, int M, int N, int K);

}  // namespace gptrain::cuda
