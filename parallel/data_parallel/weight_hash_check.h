// --check-weight-hash-across-dp-replicas-interval (Megatron's check_param_hashes_across_dp_replicas with
// cross_check): every DP replica must hold bit-identical parameters. Each rank hashes each of its parameter
// tensors (CRC-32C of the compute-dtype bytes), the hashes are all-gathered over the DP group (routed experts
// over the expert-DP group), and any difference between two replicas is a mismatch.
#pragma once

#include "parallel/pipeline/distributed_gpt.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain::parallel {

// Collective over every rank. nullopt when every DP group's replicas match; otherwise, on every rank, the
// lowest mismatching rank's message ("rank R: its parameters (DP rank r) differ from global rank Q's (DP rank
// q) in <tensors>"). The parameters must
// be complete (parameter gathers finished).
std::optional<std::string> weight_hash_mismatch(DistributedGpt& model);

// Test hook: GPTRAIN_TEST_CORRUPT_WEIGHT="RANK:ITERATION" flips one bit of this process's first parameter
// when it is global rank RANK and the check runs after ITERATION iterations (0: the start-up check).
void maybe_corrupt_weight_for_test(DistributedGpt& model, int64_t iteration);

}  // namespace gptrain::parallel
