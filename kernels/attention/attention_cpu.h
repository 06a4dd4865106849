// CPU twin of causal self-attention with the flash contract (only lse saved), GQA, segment masks and
// attention dropout (maths in attention_math.h).
#pragma once

#include <cstdint>

namespace gptrain::cpu {

void attention_forward(float* out, float* lse, const float* qkv, const int32_t* segment_ids, int B, int T, int NH,
                       int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                        const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                        uint64_t seed, uint64_t offset);

// Row kernels of the above (exposed for the CPU's vector-ISA clones; see GPTRAIN_CPU_CLONES).
float softmax_row(float* row, int t, int keys, const int32_t* seg);
void softmax_grad_row(float* p, float* dp, const float* mult, int t, int keys, const int32_t* seg, float lse, float D);

}  // namespace gptrain::cpu
