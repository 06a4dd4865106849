// CPU twin of the token (+ learned position) embedding, vocab-parallel ready.
#pragma once

#include <cstdint>

namespace gptrain::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                       const float* wpe, int N, int C, int vocab_start, int V_local);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        const int32_t* positions, int N, int C, int vocab_start, int V_local);

}  // namespace gptrain::cpu
