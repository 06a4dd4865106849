// The data side of pretrain_gpt: Megatron's data flags, the train/valid/test datasets (GPTDataset or
// BlendedDataset, index cached on disk) for per-split sample counts, and micro-batches in Megatron's order.
//
//   auto ds = build_gpt_datasets(args, seq_length, seed, counts,
//                                {.builds_cache = rank == 0, .barrier = [&] { comm.barrier(); }});
//   GPTBatchLoader train(ds.train, {.micro_batch_size = 4, .global_batch_size = 32, .dp_rank = r, .dp_size = 2}, opts);
//   MicroBatch mb = train.micro_batch(consumed_train_samples, k);   // k < train.num_micro_batches()
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/gpt_dataset/sample_dataset.h"

namespace gptrain {

// The data flags (Megatron's names). The sequence length and seed come from the model and training flags
// and are passed to build_gpt_datasets; the end-of-document id from the tokenizer (batch_options).
struct DataArgs {
  std::vector<std::string> data_path;  // --data-path: prefixes, or weight prefix pairs (docs/megatron-compat.md §2.5)
  std::vector<std::string> train_data_path, valid_data_path, test_data_path;  // per-split blends (no --split)
  // The same lists read from files (data/loader/data_args_files.h); validate_train_args fills the lists above.
  std::optional<std::string> data_args_path, per_split_data_args_path;
  // --multiple-validation-sets: each --valid-data-path prefix its own validation dataset (weights unused).
  bool multiple_validation_sets = false;
  std::vector<std::string> validation_set_names;  // their names in the log (default: their index)
  std::optional<std::string> split;               // --split; unset with --data-path means "969, 30, 1" (with a warning)
  std::optional<std::string> data_cache_path;     // --data-cache-path; unset: <prefix>/cache/GPTDataset_indices
  double mid_level_dataset_surplus = 0.005;
  bool mock_data = false;             // --mock-data: synthetic samples instead of datasets (core/train)
  bool eod_mask_loss = false;         // --eod-mask-loss
  bool reset_position_ids = false;    // --reset-position-ids
  bool reset_attention_mask = false;  // --reset-attention-mask
};

// Requested samples per split (train, valid, test); nullopt = "one epoch" (Megatron's None).
using SplitSampleCounts = std::array<std::optional<int64_t>, 3>;

// Cache building across ranks: the builder rank (global rank 0) builds and writes the index cache,
// then calls barrier(); the others call barrier() first, then map the files. Single process: defaults.
struct BuildSync {
  bool builds_cache = true;
  std::function<void()> barrier = [] {};
};

struct GPTDatasets {
  std::shared_ptr<const SampleDataset> train, valid, test;  // any may be null (no such split)
  // --multiple-validation-sets with several --valid-data-path prefixes: one dataset each (valid is the first).
  std::vector<std::shared_ptr<const SampleDataset>> valid_sets;
};

// seq_length: --seq-length; seed: --seed (the shuffles).
GPTDatasets build_gpt_datasets(const DataArgs& args, int64_t seq_length, uint32_t seed, const SplitSampleCounts& counts,
                               const BuildSync& sync = {});
// What build_gpt_datasets checks (files open and valid, blends and splits well-formed, every split
// non-empty where samples are asked of it), with datasets that only know their planned sizes: no index
// is built, read or written (pretrain_gpt --dry-run).
GPTDatasets plan_gpt_datasets(const DataArgs& args, int64_t seq_length, uint32_t seed, const SplitSampleCounts& counts);

// One micro-batch, row-major (B, T).
struct MicroBatch {
  int B = 0, T = 0;
  std::vector<int32_t> tokens;        // (B, T) window[0:T]
  std::vector<int32_t> labels;        // (B, T) window[1:T+1]
  std::vector<int32_t> position_ids;  // (B, T) 0..T-1, restarting after each EOD with --reset-position-ids
  std::vector<int32_t> segment_ids;   // (B, T) document number inside the row (after each EOD +1) with
                                      // --reset-attention-mask, else all 0: attention stays inside a segment
  std::vector<float> loss_mask;       // (B, T) 1, or 0 where the input token is EOD with --eod-mask-loss
  std::vector<int64_t> sample_ids;    // (B) dataset indices of the rows, for logging and tests
};

struct BatchShape {
  int micro_batch_size = 1;
  int global_batch_size = 1;
  int dp_rank = 0;
  int dp_size = 1;
};

struct BatchOptions {
  int32_t eod_token = 50256;
  bool eod_mask_loss = false;
  bool reset_position_ids = false;
  bool reset_attention_mask = false;
  int64_t vocab_size = 0;  // > 0: every token id must lie in [0, vocab_size), checked naming its sample
};
BatchOptions batch_options(const DataArgs& a, int32_t eod_token, int64_t vocab_size = 0);

// Megatron's MegatronPretrainingSampler ("single"): samples are taken in dataset order from
// consumed_samples; each round of micro_batch_size * dp_size consecutive indices is one micro-batch per
// rank, rank r taking the r-th block; a global batch is global_batch / (mbs * dp) rounds. Stateless:
// resuming = passing the checkpoint's consumed samples. Used for train, valid (consumed_valid_samples,
// continuing across evaluations as Megatron does) and test (starting at 0).
class GPTBatchLoader {
 public:
  GPTBatchLoader(std::shared_ptr<const SampleDataset> dataset, BatchShape shape, BatchOptions options);

  int num_micro_batches() const { return num_micro_; }
  // Micro-batch k (0 <= k < num_micro_batches) of the global batch that starts at consumed_samples.
  MicroBatch micro_batch(int64_t consumed_samples, int k) const;
  void fill(MicroBatch& mb, int64_t consumed_samples, int k) const;  // reuses mb's buffers
  // The micro-batch of dataset rows first, first + 1, ...; rows at or past `end` are padding (sample 0's
  // window without loss tokens): the last, partial micro-batches of a pass over the whole dataset.
  void fill_range(MicroBatch& mb, int64_t first, int64_t end) const;
  // The dataset indices of micro-batch k's rows on this rank.
  std::vector<int64_t> sample_ids(int64_t consumed_samples, int k) const;
  const SampleDataset& dataset() const { return *dataset_; }

 private:
  // Rows from `ids`; those from real_rows on are padding (no loss tokens).
  void fill_rows(MicroBatch& mb, std::vector<int64_t> ids, int real_rows) const;
  std::shared_ptr<const SampleDataset> dataset_;
  BatchShape shape_;
  BatchOptions options_;
  int num_micro_ = 0;
};

// Masks and positions of one row from its window (T + 1 tokens), exactly as Megatron's
// get_ltor_masks_and_position_ids.
void fill_row(const int32_t* window, int T, const BatchOptions& o, int32_t* tokens, int32_t* labels,
              int32_t* position_ids, int32_t* segment_ids, float* loss_mask);

}  // namespace gptrain
