// Causal self-attention with the flash contract (kernels/backend.h, attention_forward/backward): only
// the per-row logsumexp is saved, the backward recomputes the probabilities from Q, K and lse. GQA,
// sliding windows (--window-size), segment masks (--reset-attention-mask) and attention dropout with the shared Philox
// index are part of every implementation. Maths and masking: attention_math.h. Design: the CPU twin processes query
// blocks with sgemm calls on strided views of qkv (no copies), seeing only the keys the causal mask lets through. On
// CUDA three implementations share one lse, so any backward runs after any forward: cuDNN's fused kernels
// (attention_cudnn*.{h,cpp}, the fast path for bf16/fp16 without dropout or segments), gptrain's tensor-core flash
// kernels (attention_tc.cu: WMMA, bf16/fp16, head sizes 64 and 128) and its FMA flash kernels (attention.cu: any dtype,
// head size up to 128, every path's fallback). All own backward kernels are deterministic (no atomics).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cpu {

void attention_forward(float* out, float* lse, const float* qkv, const int32_t* segment_ids, int B, int T, int NH,
                       int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads = {},
                       int window = -1);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                        const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                        uint64_t seed, uint64_t offset, HeadSlice heads = {}, int window = -1);

// Row kernels of the above (exposed for the CPU's vector-ISA clones; see GPTRAIN_CPU_CLONES).
float softmax_row(float* row, int t, int k0, int lo, int n, const int32_t* seg);
void softmax_grad_row(float* p, float* dp, const float* mult, int t, int k0, int lo, int n, const int32_t* seg,
                      float lse, float D);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// Largest head size the flash kernels take.
constexpr int kFlashMaxHeadSize = 128;

// The FMA flash kernels (attention.cu): any dtype, HS <= kFlashMaxHeadSize.
void flash_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv,
                             const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                             uint64_t seed, uint64_t offset, HeadSlice heads = {}, int window = -1);
void flash_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout, const void* qkv,
                              const void* out, const float* lse, const int32_t* segment_ids, int B, int T, int NH,
                              int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads = {},
                              int window = -1);

// gptrain's own kernels as CudaBackend calls them (attention_tc.cu): the tensor-core kernels where they
// apply, else the FMA kernels. Which of the two runs a case: "tc" or "fma"; allow_tc = false forces "fma"
// (--attention-backend flash-fma). The tensor-core kernels need bf16/fp16, HS 64 or 128 and 16-byte
// aligned tensors (they move 8 elements per load); pointers may be null when not known yet.
bool tc_attention_supports(DType t, int HS, const void* a = nullptr, const void* b = nullptr, const void* c = nullptr,
                           const void* d = nullptr);
const char* own_attention_kernel(bool allow_tc, DType t, int HS);

void own_attention_forward(cudaStream_t s, DType t, bool allow_tc, void* out, float* lse, const void* qkv,
                           const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                           uint64_t seed, uint64_t offset, HeadSlice heads = {}, int window = -1);
void own_attention_backward(cudaStream_t s, DType t, bool allow_tc, Workspace& ws, void* dqkv, const void* dout,
                            const void* qkv, const void* out, const float* lse, const int32_t* segment_ids, int B,
                            int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                            HeadSlice heads = {}, int window = -1);

// The scratch of both own backwards (FMA and tensor-core): the row sums D = rowsum(dO * O), (B, T, NH) fp32.
constexpr std::size_t flash_attention_backward_scratch_bytes(std::size_t B, std::size_t T, std::size_t NH) {
  return carve_bytes<float>(B * T * NH);
}

// The tensor-core kernels alone (callers check tc_attention_supports first).
void tc_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, const int32_t* segment_ids,
                          int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                          HeadSlice heads = {}, int window = -1);
void tc_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout, const void* qkv,
                           const void* out, const float* lse, const int32_t* segment_ids, int B, int T, int NH, int NKV,
                           int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads = {},
                           int window = -1);

}  // namespace gptrain::cuda
