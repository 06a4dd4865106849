// What a training run builds from its flags before the model exists, shared by the run and by
// pretrain_gpt --dry-run: the backend, the vocabulary, the per-split sample counts and the datasets.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/config/train_args.h"
#include "data/loader/gpt_data.h"
#include "kernels/backend.h"

#include <memory>
#include <optional>
#include <string>

namespace gptrain {

// --device auto|cpu|cuda, the compute dtype of --bf16/--fp16, --attention-backend and --deterministic-mode
// -> a backend on GPU `device` (the local rank's; ignored by the cpu backend). auto picks cuda when the
// build has it and a device opens, else cpu.
std::unique_ptr<Backend> make_training_backend(const TrainArgs& args, int device = 0);

// The backend a run with these flags would get, without opening a device: "cpu" or "cuda" (--device auto:
// cuda in a CUDA build when a GPU is visible).
std::string planned_backend_name(const TrainArgs& args);

// Refuses, before any work, a head dim (kv_channels) the backend's attention cannot run: the cuda backend's
// flash kernels (every CUDA path's fallback) and cuDNN fused attention take head dims up to 128, so a
// Gemma model (head dim 256) fails here, naming the head dim and `device`, instead of at its first step.
void check_attention_head_dim(const std::string& backend_name, int kv_channels, const std::string& device);

// Vocabulary size and end-of-document id from the tokenizer flags (GPT2BPETokenizer; --vocab-size
// sets the size for --mock-data).
struct VocabInfo {
  int vocab_size = 0;
  int32_t eod_token = 0;
};
VocabInfo vocab_info(const TrainArgs& args);

// Megatron's get_train_valid_test_num_samples: train = train_samples or train_iters * gbs;
// valid = (train_iters // eval_interval + 1 - start_eval_at_iter // eval_interval) * eval_iters * gbs (the
// evaluation points before --start-eval-at-iter skipped; train_iters = train_samples // gbs when
// training by samples, unless `sample_train_iters` gives the count of a batch-size ramp); test =
// eval_iters * gbs. Needs the resolved global batch size.
SplitSampleCounts split_sample_counts(const TrainingArgs& t, std::optional<int64_t> sample_train_iters = std::nullopt);

// Train/valid/test datasets from the data flags (or --mock-data); `sync` lets rank 0 build the index
// cache for the other ranks.
GPTDatasets training_datasets(const TrainArgs& args, const VocabInfo& vocab, const BuildSync& sync = {});

// Where non-persistent saves go (and are loaded from): --non-persistent-global-ckpt-dir, else
// <base>/non_persistent with base the --save (saving) or --load (loading) directory.
std::string non_persistent_dir(const CheckpointArgs& a, const std::string& base);

// The checkpoint --load resumes from: the directory holding it and its step. By Megatron's rule the
// non-persistent save (with --non-persistent-ckpt-type) is taken when it is at least as recent as the one the
// tracker names; --ckpt-step names a step of --load itself. A directory without a tracker but with complete
// iter_* (its save could not write the tracker) stands for its newest one, with a warning. nullopt without
// --load, or (with a warning, as Megatron) when --load holds no checkpoint at all: the run starts from random
// initialization (an error with --exit-on-missing-checkpoint or --finetune).
struct CheckpointChoice {
  std::string dir;  // the --load directory or the non-persistent one
  checkpoint::Step step;
  bool non_persistent = false;
};
std::optional<CheckpointChoice> checkpoint_choice(const CheckpointArgs& a);
// checkpoint_choice, opened.
std::optional<checkpoint::Checkpoint> checkpoint_to_load(const CheckpointArgs& a);

// Fails when --save (and the non-persistent save directory) could not be written: the directory (or, if it
// does not exist yet, its nearest existing parent) must be a directory a file can be created in (one is
// created and removed at once); or when the save directories overlap --load or each other
// (check_checkpoint_dirs).
void check_save_dir(const CheckpointArgs& a);

// training_datasets' checks without building an index (pretrain_gpt --dry-run): see plan_gpt_datasets.
GPTDatasets plan_training_datasets(const TrainArgs& args, const VocabInfo& vocab);

}  // namespace gptrain
