// Context-parallel attention blocks (ops attention_kv_pack, attention_block_forward/backward in
// kernels/ops.inc): one step of the ring in which K/V blocks travel between CP ranks. Maths and layout:
// attention_block_math.h. The CPU twin multiplies each (query chunk, visible key chunks) pair with sgemm;
// the CUDA twin is a direct kernel per query row / key row (correctness first: not yet run on a GPU).
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void attention_kv_pack(float* kv, const float* qkv, int N, int NH, int NKV, int HS);
void attention_block_forward(float* out_acc, float* lse, const float* qkv, const float* kv, int B, int NH, int NKV,
                             int HS, AttentionBlock blk, bool first, float dropout_p, uint64_t seed, uint64_t offset,
                             HeadSlice heads);
void attention_block_backward(float* dq_acc, float* dkv_acc, const float* dout, const float* qkv, const float* kv,
                              const float* out, const float* lse, int B, int NH, int NKV, int HS, AttentionBlock blk,
                              float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

constexpr int kBlockAttentionMaxHeadSize = 128;

void attention_kv_pack(cudaStream_t s, DType t, void* kv, const void* qkv, int N, int NH, int NKV, int HS);
void attention_block_forward(cudaStream_t s, DType t, float* out_acc, float* lse, const void* qkv, const void* kv,
                             int B, int NH, int NKV, int HS, AttentionBlock blk, bool first, float dropout_p,
                             uint64_t seed, uint64_t offset, HeadSlice heads);
void attention_block_backward(cudaStream_t s, DType t, float* dq_acc, float* dkv_acc, const void* dout, const void* qkv,
                              const void* kv, const void* out, const float* lse, int B, int NH, int NKV, int HS,
                              AttentionBlock blk, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads);

}  // namespace gptrain::cuda
