// Per-head RMSNorm of the Q and K heads of a qkv buffer (kernels/backend.h, qk_norm_forward/backward),
// Megatron's --qk-layernorm: one (HS) weight for all query heads, one for all key groups.
// Design: in place on the (N, QKV) buffer the attention reads, strided by head, so no gather of Q and K
// into a separate buffer and no scatter back; forward saves the norm's input as (N, NH + NKV, HS) and
// the per-head rstd for backward, which turns the Q/K part of dqkv from d(output) into d(input) in place
// (V's gradient passes unchanged). Null weights (and weight gradients) give Megatron's --qk-l2-norm: the same
// normalisation with scale 1 and no parameters. Maths: qk_norm_math.h. Weight gradients are column sums over every
// (row, head) pair of their part, in a fixed order on both twins (deterministic, no atomics).
#pragma once

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void qk_norm_forward(float* qkv, float* qk_saved, float* rstd, const float* q_weight, const float* k_weight, int N,
                     int NH, int NKV, int HS, float eps, bool zero_centered_gamma);
void qk_norm_backward(float* dqkv, float* dq_weight, float* dk_weight, const float* qk_saved, const float* q_weight,
                      const float* k_weight, const float* rstd, int N, int NH, int NKV, int HS,
                      bool zero_centered_gamma);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// qk_norm.cu
void qk_norm_forward(cudaStream_t s, DType t, void* qkv, void* qk_saved, float* rstd, const void* q_weight,
                     const void* k_weight, int N, int NH, int NKV, int HS, float eps, bool zero_centered_gamma);
void qk_norm_backward(cudaStream_t s, DType t, void* dqkv, float* dq_weight, float* dk_weight, const void* qk_saved,
                      const void* q_weight, const void* k_weight, const float* rstd, int N, int NH, int NKV, int HS,
                      bool zero_centered_gamma);

}  // namespace gptrain::cuda
