// Rotary position embedding, in place on the Q and K heads of a qkv buffer (kernels/backend.h, rope):
// the first rotary_dim dims of each head rotate, as interleaved pairs (GPT-J) or half-split pairs
// (NeoX/Llama); inverse = true applies the transposed rotation (the backward). Maths: rope_math.h.
// Design: rows are independent; the angles are formed exactly alike on both twins (fp32 inverse
// frequency, Llama-3 scaled when asked, fp32 position * inv_freq, cosf/sinf), the CPU once per row for all heads, CUDA
// one thread per (row, rotated head, pair). V is never touched.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void rope(float* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
          bool interleaved, bool inverse, RopeScaling scaling);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// rope.cu
void rope(cudaStream_t s, DType t, void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim,
          float base, bool interleaved, bool inverse, RopeScaling scaling);

}  // namespace gptrain::cuda
