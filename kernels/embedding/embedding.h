// Token (+ learned position) embedding, vocab-parallel ready (kernels/backend.h, embedding_forward/
// backward): wte holds rows [vocab_start, vocab_start + V_local) of the vocabulary and tokens outside
// that range contribute zero, so the tensor-parallel wrapper sums over ranks.
// Design: the forward is a row gather. The backward is a scatter-add where tokens repeat, made
// deterministic without atomics on both twins: the CPU splits the channels across threads and walks
// the tokens in order; CUDA stably sorts the rows by token (CUB radix sort) and sums each token's rows
// in row order, the CPU's order (fp32 results are bit-identical).
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte, const float* wpe,
                       int N, int C, int vocab_start, int V_local);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                        int N, int C, int vocab_start, int V_local);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// embedding.cu
void embedding_forward(cudaStream_t s, DType t, void* out, const int32_t* tokens, const int32_t* positions,
                       const void* wte, const void* wpe, int N, int C, int vocab_start, int V_local);
// Deterministic: rows are stably sorted by token (CUB radix sort), then each distinct token's rows are
// summed in row order by one block.
void embedding_backward(cudaStream_t s, DType t, Workspace& ws, float* dwte, float* dwpe, const void* dout,
                        const int32_t* tokens, const int32_t* positions, int N, int C, int vocab_start, int V_local);

}  // namespace gptrain::cuda
