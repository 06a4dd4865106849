// Memory the sample-order arrays will take, known from the epoch plan before anything is built, and the
// check that refuses a request this machine cannot hold (e.g. --train-samples far beyond a small dataset,
// which would otherwise grow for minutes and then die) with the bytes it needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/common/host_memory.h"
#include "data/gpt_dataset/gpt_index.h"

namespace gptrain {

// document_index (int32, E x docs) + sample_index (int64, (n + 1) x 2) + shuffle_index (int64, n); saturates
// at UINT64_MAX.
uint64_t gpt_index_bytes(const GPTEpochPlan& plan, SeqRange range);
// dataset_index (int16) + dataset_sample_index (int64) of a blend of `size` samples.
uint64_t blend_index_bytes(int64_t size);

inline uint64_t add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Refuses (gptrain::Error) when `bytes` exceed `available` (when known), naming `what`, the bytes needed,
// those available and the limit, and `shrink_flags`, the flags that ask for a smaller index.
void check_index_memory(const std::string& what, uint64_t bytes, const std::optional<AvailableMemory>& available,
                        const std::string& shrink_flags);

// The flags that shrink the index of split k (0 train, 1 valid, 2 test): its sample count's.
std::string index_shrink_flags(int split);

// "1.50 GiB (1610612736 bytes)", "512 bytes"
std::string describe_bytes(uint64_t bytes);

}  // namespace gptrain
