// Context parallelism's share of a micro-batch (Megatron's get_batch_on_this_cp_rank): every sequence of
// T tokens cut into 2 * CP chunks, CP rank r keeping chunks r and 2 * CP - 1 - r back to back, for tokens,
// labels, loss mask, position ids (RoPE and learned positions see the global positions) and segment ids.
#pragma once

#include "core/model/gpt_stage.h"

namespace gptrain::parallel {

// mb holds B sequences of T tokens; T must be divisible by 2 * cp.
HostMicroBatch context_parallel_slice(const HostMicroBatch& mb, int B, int T, int cp, int rank);

}  // namespace gptrain::parallel
