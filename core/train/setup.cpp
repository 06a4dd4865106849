#include "core/train/setup.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/schedule/batch_schedule.h"
#include "core/train/mock_dataset.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "kernels/backend.h"

namespace gptrain {

namespace {

std::unique_ptr<Backend> open_backend(const std::string& device, DType dtype, const BackendOptions& options) {
  if (device == "cpu" || device == "cuda") return make_backend(device, dtype, options);
#ifdef GPTRAIN_HAVE_CUDA
  try {
    return make_backend("cuda", dtype, options);
  } catch (const Error& e) {
    log::warn("--device auto: no usable CUDA device ({}); using the cpu backend", e.what());
  }
#endif
  return make_backend("cpu", dtype, options);
}

}  // namespace

std::unique_ptr<Backend> make_training_backend(const TrainArgs& args, int device) {
  // make_backend("cpu") refuses any --attention-backend but auto (its one attention implementation).
  const BackendOptions options{parse_attention_backend(args.backend.attention_backend), args.backend.deterministic_mode,
                               device};
  return open_backend(args.backend.device, args.params_dtype, options);
}

std::string planned_backend_name(const TrainArgs& args) {
  const std::string& dev = args.backend.device;
  if (dev != "auto") return dev;
  return cuda_device_count() > 0 ? "cuda" : "cpu";
}

VocabInfo vocab_info(const TrainArgs& a) {
  const TokenizerArgs& t = a.tokenizer;
  check(t.tokenizer_type == "GPT2BPETokenizer", "--tokenizer-type {}: gptrain implements GPT2BPETokenizer only",
        t.tokenizer_type);
  check(t.vocab_file.has_value() == t.merge_file.has_value(), "--vocab-file and --merge-file go together");
  const GPT2Tokenizer tok = t.vocab_file ? GPT2Tokenizer(*t.vocab_file, *t.merge_file) : GPT2Tokenizer::load_default();
  VocabInfo v{tok.vocab_size(), tok.eod_id()};
  if (t.vocab_size) {
    check(a.data.mock_data,
          "--vocab-size {} with GPT2BPETokenizer: the tokenizer fixes the vocabulary ({}); "
          "--vocab-size is only for --mock-data",
          *t.vocab_size, v.vocab_size);
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
  if (t.eval_interval) {
    check(*t.eval_interval > 0, "--eval-interval must be positive, got {}", *t.eval_interval);
    evals = train_iters / *t.eval_interval + 1;
  }
  return {train_samples, evals * t.eval_iters * gbs, t.eval_iters * gbs};
}

GPTDatasets training_datasets(const TrainArgs& a, const VocabInfo& v, const BuildSync& sync) {
  const TrainingArgs& t = a.training;
  const auto batches = schedule::GlobalBatchSchedule::from_args(t, a.data_parallel_size, *a.model.seq_length);
  std::optional<int64_t> iters;
  if (t.train_samples) iters = batches.train_iters(*t.train_samples);
  const SplitSampleCounts counts = split_sample_counts(t, iters);
  const int64_t T = *a.model.seq_length;
  if (!a.data.mock_data) return build_gpt_datasets(a.data, T, uint32_t(t.seed), counts, sync);
  const int64_t gbs = *t.global_batch_size;
  auto mock = [&](int split, uint64_t salt) -> std::shared_ptr<const SampleDataset> {
    int64_t n = counts[split].value_or(int64_t(t.eval_iters) * gbs);
    // A ramp's last ramp-up iteration may pass --train-samples by less than a batch (Megatron's datasets
    // have that surplus).
    if (split == 0 && batches.varies()) n += gbs;
    if (n <= 0) return nullptr;
    return std::make_shared<MockSampleDataset>(n, T, v.vocab_size, v.eod_token, uint64_t(t.seed) * 3 + salt);
  };
  return {mock(0, 0), mock(1, 1), mock(2, 2)};
}

}  // namespace gptrain
