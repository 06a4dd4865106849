#include "core/train/setup.h"

#include "core/checkpoint/retention.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/schedule/batch_schedule.h"
#include "core/train/checkpoint_dirs.h"
#include "core/train/mock_dataset.h"
#include "core/config/tokenizer_spec.h"
#include "kernels/attention/attention.h"
#include "kernels/backend.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gptrain {

namespace {

std::unique_ptr<Backend> open_backend(const std::string& device, DType dtype, const BackendOptions& options) {
  if (device == "cpu" || device == "cuda") return make_backend(device, dtype, options);
  // auto: the GPU when one is visible (without a driver, cuda_device_count loads no CUDA library).
  if (cuda_device_count() > 0) {
    try {
      return make_backend("cuda", dtype, options);
    } catch (const Error& e) {
      log::warn("--device auto: no usable CUDA device ({}); using the cpu backend", e.what());
    }
  }
  return make_backend("cpu", dtype, options);
}

}  // namespace

std::unique_ptr<Backend> make_training_backend(const TrainArgs& args, int device) {
  // make_backend("cpu") refuses any --attention-backend but auto (its one attention implementation).
  const BackendOptions options{parse_attention_backend(args.backend.attention_backend), args.backend.deterministic_mode,
                               device};
  std::unique_ptr<Backend> be = open_backend(args.backend.device, args.params_dtype, options);
  // --device auto may land on the GPU: the same refusal fp8_args.cpp gives --device cuda.
  check(!args.whole_model.fp8.enabled || std::strcmp(be->name(), "cuda") != 0 || args.params_dtype != DType::F32,
        "--fp8-format with fp32 parameters on the cuda backend: add --bf16 (or --fp16), as Megatron's FP8 recipes "
        "expect");
  return be;
}

std::string planned_backend_name(const TrainArgs& args) {
  const std::string& dev = args.backend.device;
  if (dev != "auto") return dev;
  return cuda_device_count() > 0 ? "cuda" : "cpu";
}

void check_attention_head_dim(const std::string& backend_name, int kv_channels, const std::string& device) {
  if (backend_name != "cuda" || kv_channels <= cuda::kFlashMaxHeadSize) return;
  fail(
      "head dim {} (--kv-channels) is not supported on {}: the cuda backend's attention kernels (flash, and cuDNN "
      "fused attention) take head dims up to {}; run this model with --device cpu",
      kv_channels, device, cuda::kFlashMaxHeadSize);
}

VocabInfo vocab_info(const TrainArgs& a) {
  const TokenizerArgs& t = a.tokenizer;
  // NullTokenizer (Megatron's): the data are token ids already; ids 0..N-1 and the end-of-document id N.
  const std::unique_ptr<Tokenizer> tok = make_tokenizer(tokenizer_spec(t));
  VocabInfo v{tok->vocab_size(), tok->eod_id()};
  // TikTokenizer reads --vocab-size as its own vocabulary (Megatron's), like NullTokenizer.
  if (t.vocab_size && t.tokenizer_type != "NullTokenizer" && t.tokenizer_type != "TikTokenizer") {
    check(a.data.mock_data,
          "--vocab-size {} with {}: the tokenizer fixes the vocabulary ({}); --vocab-size is only for --mock-data",
          *t.vocab_size, t.tokenizer_type, v.vocab_size);
    check(*t.vocab_size >= 2, "--vocab-size must be >= 2");
    v.vocab_size = *t.vocab_size;
    v.eod_token = v.vocab_size - 1;
  }
  return v;
}

SplitSampleCounts split_sample_counts(const TrainingArgs& t, std::optional<int64_t> sample_train_iters) {
  const int64_t gbs = t.global_batch_size.value_or(0);
  check(gbs > 0, "--global-batch-size must be positive, got {}", gbs);
  check(t.train_iters.has_value() != t.train_samples.has_value(),
        "give exactly one of --train-iters and --train-samples");
  check(t.eval_iters >= 0, "--eval-iters must be >= 0, got {}", t.eval_iters);
  int64_t train_samples, train_iters;
  if (t.train_samples) {
    check(*t.train_samples >= 0, "--train-samples must be >= 0, got {}", *t.train_samples);
    train_samples = *t.train_samples;
    train_iters = sample_train_iters.value_or(train_samples / gbs);  // Megatron's update_train_iters
  } else {
    check(*t.train_iters >= 0, "--train-iters must be >= 0, got {}", *t.train_iters);
    train_iters = *t.train_iters;
    train_samples = train_iters * gbs;
  }
  int64_t evals = 1;
  // --skip-train evaluates once (Megatron's eval_iters alone); otherwise every --eval-interval and at the end.
  if (t.eval_interval && !t.skip_train) {
    check(*t.eval_interval > 0, "--eval-interval must be positive, got {}", *t.eval_interval);
    evals = train_iters / *t.eval_interval + 1;
    // Megatron's count: the evaluation points before --start-eval-at-iter are not run.
    if (t.start_eval_at_iter) evals = std::max<int64_t>(0, evals - *t.start_eval_at_iter / *t.eval_interval);
  }
  const int64_t eval_gbs = t.eval_global_batch_size.value_or(gbs);
  // --full-validation: the validation split is built as one epoch (Megatron's None).
  std::optional<int64_t> valid;
  if (!t.full_validation) valid = evals * t.eval_iters * eval_gbs;
  return {train_samples, valid, t.eval_iters * eval_gbs};
}

namespace {

GPTDatasets with_train_split(GPTDatasets d) {
  check(d.train != nullptr, "no training data: the train split is empty (check --split / --train-data-path)");
  return d;
}

// Evaluation asked for (--eval-iters > 0) with no validation data is skipped; say so rather than train
// without the losses the user expects to see.
void warn_without_validation(const GPTDatasets& d, const TrainArgs& a) {
  if (d.valid || (a.training.eval_iters <= 0 && !a.training.full_validation)) return;
  const std::string why =
      a.data.valid_data_path.empty() && !a.data.data_path.empty()
          ? fmt::format("--split {} gives the validation split no documents", a.data.split.value_or("969,30,1"))
          : std::string("no --valid-data-path");
  log::warn("{}: no validation loss will be computed (--eval-iters {}{})", why, a.training.eval_iters,
            a.training.eval_interval ? fmt::format(", --eval-interval {}", *a.training.eval_interval) : "");
}

}  // namespace

namespace {

// The per-split sample counts of this run: by samples, the iteration count follows the batch schedule.
SplitSampleCounts run_sample_counts(const TrainArgs& a, const schedule::GlobalBatchSchedule& batches) {
  const TrainingArgs& t = a.training;
  std::optional<int64_t> iters;
  if (t.train_samples) iters = batches.train_iters(*t.train_samples);
  return split_sample_counts(t, iters);
}

schedule::GlobalBatchSchedule batch_schedule(const TrainArgs& a) {
  return schedule::GlobalBatchSchedule::from_args(a.training, a.data_parallel_size, *a.model.seq_length);
}

}  // namespace

GPTDatasets training_datasets(const TrainArgs& a, const VocabInfo& v, const BuildSync& sync) {
  const TrainingArgs& t = a.training;
  const auto batches = batch_schedule(a);
  const SplitSampleCounts counts = run_sample_counts(a, batches);
  const int64_t T = *a.model.seq_length;
  if (!a.data.mock_data) {
    GPTDatasets d = with_train_split(build_gpt_datasets(a.data, T, uint32_t(t.seed), counts, sync));
    warn_without_validation(d, a);
    return d;
  }
  const int64_t gbs = *t.global_batch_size;
  auto mock = [&](int split, uint64_t salt) -> std::shared_ptr<const SampleDataset> {
    int64_t n = counts[split].value_or(int64_t(t.eval_iters) * t.eval_global_batch_size.value_or(gbs));
    // A ramp's last ramp-up iteration may pass --train-samples by less than a batch (Megatron's datasets
    // have that surplus).
    if (split == 0 && batches.varies()) n += gbs;
    if (n <= 0) return nullptr;
    return std::make_shared<MockSampleDataset>(n, T, v.vocab_size, v.eod_token, uint64_t(t.seed) * 3 + salt);
  };
  return with_train_split({mock(0, 0), mock(1, 1), mock(2, 2), {}});
}

GPTDatasets plan_training_datasets(const TrainArgs& a, const VocabInfo& v) {
  if (a.data.mock_data) return training_datasets(a, v);  // synthetic: nothing on disk to check
  return with_train_split(plan_gpt_datasets(a.data, *a.model.seq_length, uint32_t(a.training.seed),
                                            run_sample_counts(a, batch_schedule(a))));
}

std::string non_persistent_dir(const CheckpointArgs& a, const std::string& base) {
  if (a.non_persistent_global_ckpt_dir) return *a.non_persistent_global_ckpt_dir;
  return (std::filesystem::path(base) / "non_persistent").string();
}

namespace {

// The step a directory's tracker names or, without a tracker, its newest complete checkpoint (a save whose
// tracker write failed leaves it so); nullopt when it holds neither. `guessed`: no tracker named it.
struct LatestStep {
  checkpoint::Step step;
  bool guessed = false;
};
std::optional<LatestStep> latest_step(const std::string& dir) {
  if (const std::optional<checkpoint::Step> tracked = checkpoint::read_tracker(dir)) return LatestStep{*tracked};
  const std::vector<int64_t> complete = checkpoint::saved_iterations(dir);
  if (!complete.empty()) return LatestStep{checkpoint::Step::at(complete.back()), true};
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(dir) / "release" / "metadata.json", ec))
    return LatestStep{checkpoint::Step::release_step(), true};
  return std::nullopt;
}

CheckpointChoice chosen(const std::string& dir, const LatestStep& latest, bool non_persistent) {
  if (latest.guessed)
    log::warn(
        "{}{}: no latest_checkpointed_iteration.txt; resuming from {}, the newest complete checkpoint there (its "
        "save could not write the tracker)",
        non_persistent ? "" : "--load ", dir, (std::filesystem::path(dir) / latest.step.dir_name()).string());
  return CheckpointChoice{dir, latest.step, non_persistent};
}

}  // namespace

std::optional<CheckpointChoice> checkpoint_choice(const CheckpointArgs& a) {
  if (!a.load) return std::nullopt;
  // A file given as --load (a tracker or a tensor file instead of its directory) is a mistake, not an
  // empty checkpoint directory to start from random weights.
  std::error_code ec;
  check(!std::filesystem::exists(*a.load, ec) || std::filesystem::is_directory(*a.load, ec),
        "--load {}: not a directory (give the checkpoint directory, the one holding "
        "latest_checkpointed_iteration.txt and iter_*)",
        *a.load);
  if (a.ckpt_step) return CheckpointChoice{*a.load, checkpoint::Step::at(*a.ckpt_step), false};
  const std::optional<LatestStep> tracked = latest_step(*a.load);
  if (a.non_persistent_ckpt_type) {
    const std::string np = non_persistent_dir(a, *a.load);
    const std::optional<LatestStep> latest = latest_step(np);
    check(!latest || !latest->step.release, "{}: a non-persistent save cannot be a release checkpoint", np);
    // A release checkpoint counts as iteration 0 (Megatron's reading of the tracker).
    if (latest && (!tracked || tracked->step.release || latest->step.iteration >= tracked->step.iteration))
      return chosen(np, *latest, true);
    if (latest)
      log::warn("{}: the non-persistent save (iteration {}) is older than --load's ({}); loading --load's", np,
                latest->step.iteration, tracked->step.tracker_text());
  }
  if (tracked) return chosen(*a.load, *tracked, false);
  const bool exists = std::filesystem::is_directory(*a.load);
  const std::string none = exists ? "no complete iter_* directory and no latest_checkpointed_iteration.txt"
                                  : "no such directory, so no latest_checkpointed_iteration.txt";
  // Fine-tuning from random weights is never what was asked for.
  check(!a.finetune, "--load {}: {}; --finetune needs the checkpoint to fine-tune", *a.load, none);
  check(!a.exit_on_missing_checkpoint, "--load {}: {} (--exit-on-missing-checkpoint)", *a.load, none);
  log::warn("--load {}: {}; starting from random initialization", *a.load, none);
  return std::nullopt;
}

std::optional<checkpoint::Checkpoint> checkpoint_to_load(const CheckpointArgs& a) {
  const std::optional<CheckpointChoice> c = checkpoint_choice(a);
  if (!c) return std::nullopt;
  return checkpoint::Checkpoint::open(c->dir, c->step);
}

namespace {

void check_writable(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec);
  while (!fs::exists(dir, ec) && dir.has_parent_path() && dir != dir.parent_path()) dir = dir.parent_path();
  check(fs::is_directory(dir, ec), "{} {}: {} is not a directory", flag, path, dir.string());
  // A file made and removed at once: access() says yes to root on a read-only mount.
  std::string probe = (dir / ".gptrain-save-check.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  check(fd >= 0, "{} {}: cannot write in {} ({})", flag, path, dir.string(), std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

void check_save_dir(const CheckpointArgs& a) {
  if (!a.save) return;
  check_checkpoint_dirs(a);
  check_writable("--save", *a.save);
  if (a.non_persistent_save_interval)
    check_writable(a.non_persistent_global_ckpt_dir ? "--non-persistent-global-ckpt-dir" : "--save (non_persistent)",
                   non_persistent_dir(a, *a.save));
}

}  // namespace gptrain
