// Megatron's TensorBoard tags (training.py training_log / evaluate_and_print_results), so existing
// dashboards work on gptrain runs. Megatron writes the training scalars every
// --tensorboard-log-interval iterations (default 1) with the CURRENT iteration's losses (not the log
// line's interval average): fill IterationLogValues::losses accordingly.
//
// Training, x = iteration (and x = consumed samples for the "... vs samples" twins):
//   learning-rate (+vs samples), decoupled-learning-rate (with --decoupled-lr; no vs-samples twin),
//   skipped-train-samples (when > 0), batch-size (+vs samples),
//   <loss name> (+vs samples) per loss, loss-scale (+vs samples), grad-norm (+vs samples),
//   num-zeros (+vs samples), params-norm (+vs samples), with log_world_size world-size (+vs samples);
//   gptrain: tokens-per-second.
// At each log line but a run's first, with --log-timers-to-tensorboard: iteration-time (seconds, the
//   line's average) and, with --log-throughput, throughput (TFLOP/s/GPU).
// Every iteration, with --log-memory-to-tensorboard: mem-reserved-bytes, mem-allocated-bytes,
//   mem-max-allocated-bytes, mem-allocated-count (MemoryScalars).
// Validation: "<loss> validation" (+ " vs samples"), and with log_ppl "<loss> validation ppl"
//   (+ " vs samples"), x = iteration / consumed train samples.
#pragma once

#include "core/metrics/log_line.h"
#include "core/metrics/tensorboard_writer.h"

#include <cstddef>
#include <optional>

namespace gptrain::metrics {

struct TensorBoardOptions {
  bool log_loss_scale = true;       // Megatron's default (--no-log-loss-scale-to-tensorboard turns it off)
  bool log_validation_ppl = false;  // --log-validation-ppl-to-tensorboard
  bool log_world_size = false;      // --log-world-size-to-tensorboard
  int world_size = 1;               // processes in the run
};

void write_train_scalars(TensorBoardWriter& w, const IterationLogValues& v, const TensorBoardOptions& o);
// iteration-time (seconds per iteration) and, when set, throughput, at x = iteration.
void write_timer_scalars(TensorBoardWriter& w, int64_t iteration, double seconds_per_iteration,
                         std::optional<double> throughput_tflops_per_gpu);
// Megatron's names for what the backend holds. gptrain allocates no caching pool: allocated is what
// Backend::alloc holds now (the training state's arenas), max_allocated its peak, count the live
// allocations; reserved is the device's used memory (total less free: every process's, the CUDA context and
// the backend's scratch included) on CUDA, and the allocated bytes on CPU.
struct MemoryScalars {
  std::size_t reserved = 0, allocated = 0, max_allocated = 0, count = 0;
};
void write_memory_scalars(TensorBoardWriter& w, int64_t iteration, const MemoryScalars& m);
// set_suffix: one of --multiple-validation-sets ("lm loss validation-NAME").
void write_validation_scalars(TensorBoardWriter& w, int64_t iteration, int64_t consumed_train_samples,
                              const std::vector<std::pair<std::string, double>>& losses, const TensorBoardOptions& o,
                              const std::string& set_suffix = "");

}  // namespace gptrain::metrics
