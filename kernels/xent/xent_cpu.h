// CPU twin of the fused softmax + cross-entropy over a shard of vocabulary columns.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace gptrain::cpu {

void xent_stats(XentStats stats, const float* logits, const int32_t* targets, int N, int V_local,
                int V_valid_local, int vocab_start);
void xent_backward(float* dlogits, const float* logits, const int32_t* targets, const float* row_max,
                   const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                   int vocab_start);
void xent_loss(float* losses, XentStats stats, int N);

}  // namespace gptrain::cpu
