// Fused softmax + cross-entropy over a shard of vocabulary columns (kernels/backend.h: xent_stats,
// xent_backward, xent_loss), vocab-parallel ready: the stats op reads a shard of the logits and writes
// per-row (max, sumexp, target logit), shards merge with xent_merge (xent_math.h), the backward reads
// the logits once more and writes dlogits, in place if asked. Vocab padding columns never win and get
// no mass.
// Design: the (N, V) probability tensor is never materialised; the CPU is row-parallel with chunked
// vectorised sums, CUDA one block per row with an online (max, sumexp) merged in a fixed tree order
// (deterministic).
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void xent_stats(XentStats stats, const float* logits, const int32_t* targets, int N, int V_local, int V_valid_local,
                int vocab_start);
void xent_backward(float* dlogits, const float* logits, const int32_t* targets, const float* row_max,
                   const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local, int vocab_start);
void xent_loss(float* losses, XentStats stats, int N);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// xent.cu
void xent_stats(cudaStream_t s, DType t, XentStats stats, const void* logits, const int32_t* targets, int N,
                int V_local, int V_valid_local, int vocab_start);
void xent_backward(cudaStream_t s, DType t, void* dlogits, const void* logits, const int32_t* targets,
                   const float* row_max, const float* row_sumexp, const float* dloss, int N, int V_local,
                   int V_valid_local, int vocab_start);
void xent_loss(cudaStream_t s, float* losses, XentStats stats, int N);

}  // namespace gptrain::cuda
