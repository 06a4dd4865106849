// The three arrays that fix Megatron's GPT sample order for one split of one dataset
// (megatron/core/datasets/gpt_dataset.py + helpers.cpp, re-derived in docs/megatron-compat.md §2.3):
//   document_index  (E * num_docs) int32: the split's sequence ids repeated for E epochs and shuffled
//                   (the last epoch shuffled on its own when it is "separate", i.e. < 80% used);
//   sample_index    (n + 1, 2) int64: (position in document_index, token offset) where sample k starts;
//   shuffle_index   (n) int64: the order in which samples are served.
// One NumpyRandomState(seed) per split, drawn first for document_index, then for shuffle_index.
// Sample k spans seq_length + 1 tokens, so neighbouring samples share one token.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "data/gpt_dataset/array_view.h"
#include "data/gpt_dataset/split.h"

namespace gptrain {

struct GPTIndexParams {
  int64_t seq_length = 0;
  std::optional<int64_t> num_samples;  // nullopt: exactly one epoch (Megatron's num_samples=None)
  uint32_t seed = 1234;
  int64_t add_extra_token = 1;  // always 1 for GPT pretraining: windows of seq_length + 1
};

// Epoch arithmetic of the split, separated out for logging and tests.
struct GPTEpochPlan {
  int64_t tokens_per_epoch = 0;
  int64_t num_epochs = 0;
  bool separate_final_epoch = false;
  int64_t samples_sans_final_epoch = 0;  // meaningful when separate_final_epoch
  int64_t num_samples = 0;               // n = (E*T - X) // S, the dataset length
};

struct GPTIndex {
  GPTEpochPlan plan;
  ArrayView<int32_t> document_index;  // (E * docs)
  ArrayView<int64_t> sample_index;    // (n + 1) * 2, row-major pairs
  ArrayView<int64_t> shuffle_index;   // (n)
  bool from_cache = false;            // mapped from the index cache rather than built here
};

// lengths: the token count of every sequence of the whole file; range: the split's sequence ids.
GPTEpochPlan plan_gpt_epochs(std::span<const int32_t> lengths, SeqRange range, const GPTIndexParams& p);
GPTIndex build_gpt_index(std::span<const int32_t> lengths, SeqRange range, const GPTIndexParams& p);

}  // namespace gptrain
