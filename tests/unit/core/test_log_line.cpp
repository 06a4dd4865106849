// Megatron's log lines, compared with literal strings built from the format strings of
// docs/megatron-compat.md §5 (rounding cases checked against Python's str.format by hand).
#include "core/metrics/log_line.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <limits>

using namespace gptrain::metrics;

namespace {

// 2026-08-22 15:22:22.123456 in UTC; the tests run with TZ=UTC so local time is UTC.
std::chrono::system_clock::time_point example_time() {
  setenv("TZ", "UTC", 1);
  tzset();
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 7;
  tm.tm_mday = 22;
  tm.tm_hour = 15;
  tm.tm_min = 22;
  tm.tm_sec = 22;
  return std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::microseconds(123456);
}

IterationLogValues example_values() {
  IterationLogValues v;
  v.timestamp = example_time();
  v.iteration = 100;
  v.train_iters = 500000;
  v.consumed_samples = 51200;
  v.elapsed_ms_per_iteration = 1234.56;
  v.throughput_tflops_per_gpu = 412.3;
  v.learning_rate = 1.5e-4;
  v.global_batch_size = 512;
  v.losses = {{"lm loss", 6.54321}};
  v.loss_scale = 1.0;
  v.grad_norm = 1.234;
  return v;
}

}  // namespace

TEST_CASE("log line: the §5 example, byte for byte", "[log_line]") {
  CHECK(format_iteration_line(example_values()) ==
        " [2026-08-22 15:22:22.123456] iteration      100/  500000 | consumed samples:        51200 |"
        " elapsed time per iteration (ms): 1234.6 | throughput per GPU (TFLOP/s/GPU): 412.3 |"
        " learning rate: 1.500000E-04 | global batch size:   512 | lm loss: 6.543210E+00 | loss scale: 1.0 |"
        " grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |");
}

TEST_CASE("log line: optional fields appear only when set, in Megatron's order", "[log_line]") {
  IterationLogValues v = example_values();
  v.throughput_tflops_per_gpu.reset();
  v.grad_norm.reset();
  v.learning_rate.reset();
  CHECK(format_iteration_line(v) ==
        " [2026-08-22 15:22:22.123456] iteration      100/  500000 | consumed samples:        51200 |"
        " elapsed time per iteration (ms): 1234.6 | global batch size:   512 | lm loss: 6.543210E+00 |"
        " loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |");

  v = example_values();
  v.iteration = 123456789;  // wider than the field: Python and fmt both just widen
  v.train_iters = 123456789;
  v.skipped_samples = 3072;
  v.global_batch_size = 123456;
  v.losses = {{"lm loss", 10.830944228172302}, {"mtp_1 loss", 2.0000005}};
  v.loss_scale = 65536.0;
  v.grad_norm = 0.0005;  // 0.000500000000000000010 in binary: rounds up, as in Python
  v.num_zeros_in_grad = 17;
  v.params_norm = 271.82818;
  v.skipped_iterations = 2;
  v.nan_iterations = 1000;
  v.tokens_per_second = 12345.67;
  v.elapsed_ms_per_iteration = 0.05;
  v.throughput_tflops_per_gpu = 0.25;  // exactly half: round-half-even gives 0.2
  CHECK(format_iteration_line(v) ==
        " [2026-08-22 15:22:22.123456] iteration 123456789/123456789 | consumed samples:        51200 |"
        " skipped samples:         3072 | elapsed time per iteration (ms): 0.1 |"
        " throughput per GPU (TFLOP/s/GPU): 0.2 | learning rate: 1.500000E-04 | global batch size: 123456 |"
        " lm loss: 1.083094E+01 | mtp_1 loss: 2.000001E+00 | loss scale: 65536.0 | grad norm: 0.001 |"
        " num zeros: 17 | params norm: 271.828 | number of skipped iterations:   2 |"
        " number of nan iterations: 1000 | tokens per second: 12345.7 |");
}

TEST_CASE("log line: negative and NaN loss averages are dropped, inf grad norm printed", "[log_line]") {
  IterationLogValues v = example_values();
  v.throughput_tflops_per_gpu.reset();
  v.losses = {{"lm loss", std::numeric_limits<double>::quiet_NaN()}, {"z loss", -1.0}, {"aux loss", 0.0}};
  v.grad_norm = std::numeric_limits<double>::infinity();
  v.learning_rate = 0.0;
  CHECK(format_iteration_line(v) ==
        " [2026-08-22 15:22:22.123456] iteration      100/  500000 | consumed samples:        51200 |"
        " elapsed time per iteration (ms): 1234.6 | learning rate: 0.000000E+00 | global batch size:   512 |"
        " aux loss: 0.000000E+00 | loss scale: 1.0 | grad norm: inf | number of skipped iterations:   0 |"
        " number of nan iterations:   0 |");
}

TEST_CASE("log line: timestamp keeps microseconds with leading zeros", "[log_line]") {
  const auto t = example_time() - std::chrono::microseconds(123456) + std::chrono::microseconds(7);
  CHECK(format_log_timestamp(t) == "2026-08-22 15:22:22.000007");
}

TEST_CASE("log line: validation and test lines with their dashes", "[log_line]") {
  const std::vector<std::pair<std::string, double>> losses = {{"lm loss", 3.21}};
  const std::string line =
      " validation loss at iteration 1000 | lm loss value: 3.210000E+00 | lm loss PPL: 2.477909E+01 | ";
  CHECK(format_validation_line(eval_prefix(1000, EvalKind::during_training), losses) == line);
  const std::string dashes(line.size() + 1, '-');
  CHECK(format_validation_block("iteration 1000", losses) == dashes + "\n" + line + "\n" + dashes);
  CHECK(dashes.size() == 96);  // len(line) + 1, counted in Python

  CHECK(format_validation_line(eval_prefix(5000, EvalKind::final_validation), {{"lm loss", 25.0}}) ==
        " validation loss at iteration 5000 on validation set | lm loss value: 2.500000E+01 |"
        " lm loss PPL: 4.851652E+08 | ");  // PPL capped at exp(20)
  CHECK(format_validation_line(eval_prefix(5000, EvalKind::final_test),
                               {{"lm loss", std::numeric_limits<double>::quiet_NaN()}}) ==
        " validation loss at iteration 5000 on test set | lm loss value: NAN | lm loss PPL: 4.851652E+08 | ");
}
