// gptrain's own attention kernels, as CudaBackend calls them: the tensor-core flash kernels
// (attention_tc.cu: WMMA, bf16/fp16, head sizes 64 and 128) where they apply, else the FMA flash
// kernels (attention.cu: any dtype, head sizes up to 128). Both honour the whole contract of
// kernels/backend.h (causal, GQA, segment masks, attention dropout with the shared Philox index),
// both write the same logsumexp, so either backward runs after either forward (or cuDNN's).
// Status: compiled for sm_80/sm_90, not yet run on a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/workspace.h"

namespace gptrain::cuda {

// Which of the own kernels runs a case: "tc" (tensor cores) or "fma". allow_tc = false forces "fma"
// (--attention-backend flash-fma). The tensor-core kernels need bf16/fp16, HS 64 or 128 and 16-byte
// aligned tensors (they move 8 elements per load); pointers may be null when not known yet.
bool tc_attention_supports(DType t, int HS, const void* a = nullptr, const void* b = nullptr,
                           const void* c = nullptr, const void* d = nullptr);
const char* own_attention_kernel(bool allow_tc, DType t, int HS);

void own_attention_forward(cudaStream_t s, DType t, bool allow_tc, void* out, float* lse, const void* qkv,
                           const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                           uint64_t seed, uint64_t offset);
void own_attention_backward(cudaStream_t s, DType t, bool allow_tc, Workspace& ws, void* dqkv, const void* dout,
                            const void* qkv, const void* out, const float* lse, const int32_t* segment_ids, int B,
                            int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset);

// The tensor-core kernels alone (callers check tc_attention_supports first).
void tc_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, const int32_t* segment_ids,
                          int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset);
void tc_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout, const void* qkv,
                           const void* out, const float* lse, const int32_t* segment_ids, int B, int T, int NH, int NKV,
                           int HS, float dropout_p, uint64_t seed, uint64_t offset);

}  // namespace gptrain::cuda
