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

}  // namespace gptrain::cpu
