// FP8 quantisation ops (kernels/backend.h, fp8_cast_transpose / fp8_dequantize): the casts of FP8
// training, with the per-tensor amax that delayed scaling records. Element maths: kernels/fp8/fp8_math.h.
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

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// fp8.cu
void fp8_cast_transpose(cudaStream_t s, DType t, uint8_t* out, uint8_t* out_t, float* amax, const void* inp,
                        const float* scale, int R, int C, Fp8Kind kind);
void fp8_dequantize(cudaStream_t s, DType t, void* out, const uint8_t* inp, const float* scale_inv, std::size_t n,
                    Fp8Kind kind);

}  // namespace gptrain::cuda
