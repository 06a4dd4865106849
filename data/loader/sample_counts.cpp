#include "core/common/error.h"
#include "data/loader/gpt_data.h"

namespace gptrain {

SplitSampleCounts megatron_sample_counts(const TrainingLength& t) {
  check(t.global_batch_size > 0, "--global-batch-size must be positive, got {}", t.global_batch_size);
  check(t.train_iters.has_value() != t.train_samples.has_value(),
        "give exactly one of --train-iters and --train-samples");
  check(t.eval_iters >= 0, "--eval-iters must be >= 0, got {}", t.eval_iters);
  const int64_t gbs = t.global_batch_size;
  int64_t train_samples, train_iters;
  if (t.train_samples) {
    check(*t.train_samples >= 0, "--train-samples must be >= 0, got {}", *t.train_samples);
    train_samples = *t.train_samples;
    train_iters = train_samples / gbs;  // Megatron's update_train_iters without batch-size ramp-up
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
  std::optional<int64_t> valid = evals * t.eval_iters * gbs;
  if (t.full_validation) valid.reset();
  return {train_samples, valid, t.eval_iters * gbs};
}

}  // namespace gptrain
