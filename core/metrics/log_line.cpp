// Megatron's log lines. fmt's {:.6E}/{:.1f}/{:8d} print the same digits as Python's str.format for
// finite values, inf ("inf"/"INF") and NaN ("nan"/"NAN").
#include "core/metrics/log_line.h"

#include "core/common/error.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

namespace gptrain::metrics {

std::string format_log_timestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto since_epoch = t.time_since_epoch();
  auto secs = duration_cast<seconds>(since_epoch);
  auto micros = duration_cast<microseconds>(since_epoch - secs).count();
  if (micros < 0) {  // before 1970: keep the fraction positive
    secs -= seconds(1);
    micros += 1000000;
  }
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm local{};
  check(localtime_r(&tt, &local) != nullptr, "format_log_timestamp: time {} is out of range", secs.count());
  return fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}.{:06d}", local.tm_year + 1900, local.tm_mon + 1,
                     local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec, micros);
}

std::string format_iteration_line(const IterationLogValues& v) {
  std::string s = fmt::format(" [{}]", format_log_timestamp(v.timestamp));
  s += fmt::format(" iteration {:8d}/{:8d} |", v.iteration, v.train_iters);
  s += fmt::format(" consumed samples: {:12d} |", v.consumed_samples);
  if (v.skipped_samples > 0) s += fmt::format(" skipped samples: {:12d} |", v.skipped_samples);
  s += fmt::format(" elapsed time per iteration (ms): {:.1f} |", v.elapsed_ms_per_iteration);
  if (v.throughput_tflops_per_gpu) {
    s += fmt::format(" throughput per GPU (TFLOP/s/GPU): {:.1f} |", *v.throughput_tflops_per_gpu);
  }
  if (v.learning_rate) s += fmt::format(" learning rate: {:.6E} |", *v.learning_rate);
  s += fmt::format(" global batch size: {:5d} |", v.global_batch_size);
  for (const auto& [name, avg] : v.losses) {
    if (avg >= 0.0) s += fmt::format(" {}: {:.6E} |", name, avg);
  }
  s += fmt::format(" loss scale: {:.1f} |", v.loss_scale);
  if (v.grad_norm) s += fmt::format(" grad norm: {:.3f} |", *v.grad_norm);
  if (v.num_zeros_in_grad) s += fmt::format(" num zeros: {} |", *v.num_zeros_in_grad);
  if (v.params_norm) s += fmt::format(" params norm: {:.3f} |", *v.params_norm);
  s += fmt::format(" number of skipped iterations: {:3d} |", v.skipped_iterations);
  s += fmt::format(" number of nan iterations: {:3d} |", v.nan_iterations);
  if (v.tokens_per_second) s += fmt::format(" tokens per second: {:.1f} |", *v.tokens_per_second);
  return s;
}

std::string eval_prefix(int64_t iteration, EvalKind kind) {
  switch (kind) {
    case EvalKind::during_training: return fmt::format("iteration {}", iteration);
    case EvalKind::final_validation: return fmt::format("iteration {} on validation set", iteration);
    case EvalKind::final_test: return fmt::format("iteration {} on test set", iteration);
  }
  return {};
}

double validation_ppl(double loss) { return std::exp(loss < 20.0 ? loss : 20.0); }

std::string format_validation_line(const std::string& prefix, const std::vector<std::pair<std::string, double>>& losses,
                                   const std::string& set_suffix) {
  std::string s = fmt::format(" validation{} loss at {} | ", set_suffix, prefix);
  for (const auto& [name, value] : losses) {
    s += fmt::format("{} value: {:.6E} | ", name, value);
    s += fmt::format("{} PPL: {:.6E} | ", name, validation_ppl(value));
  }
  return s;
}

std::string format_validation_block(const std::string& prefix,
                                    const std::vector<std::pair<std::string, double>>& losses,
                                    const std::string& set_suffix) {
  const std::string line = format_validation_line(prefix, losses, set_suffix);
  const std::string dashes(line.size() + 1, '-');
  return dashes + "\n" + line + "\n" + dashes;
}

}  // namespace gptrain::metrics
