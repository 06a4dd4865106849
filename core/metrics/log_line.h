// Megatron's training log line and validation lines, byte for byte (megatron/training/training.py
// training_log and evaluate_and_print_results; docs/megatron-compat.md §5), from plain values.
//
// Iteration line, pieces in order (optional ones in brackets):
//  " [YYYY-mm-dd HH:MM:SS.ffffff]"  " iteration {:8d}/{:8d} |"  " consumed samples: {:12d} |"
//  [" skipped samples: {:12d} |" when > 0]  " elapsed time per iteration (ms): {:.1f} |"
//  [" throughput per GPU (TFLOP/s/GPU): {:.1f} |" with --log-throughput]
//  [" learning rate: {:.6E} |"]  " global batch size: {:5d} |"
//  " {loss name}: {:.6E} |" per loss whose average is >= 0 (Megatron drops negative and NaN averages)
//  " loss scale: {:.1f} |"  [" grad norm: {:.3f} |"]  [" num zeros: {} |"]  [" params norm: {:.3f} |"]
//  " number of skipped iterations: {:3d} |"  " number of nan iterations: {:3d} |"
// then gptrain's one addition, after everything Megatron prints so the Megatron part stays an exact
// prefix for log parsers:  [" tokens per second: {:.1f} |"]  (global tokens/s over the interval).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gptrain::metrics {

struct IterationLogValues {
  std::chrono::system_clock::time_point timestamp;  // printed in local time, as Python's datetime.now()
  int64_t iteration = 0;
  int64_t train_iters = 0;
  int64_t consumed_samples = 0;
  int64_t skipped_samples = 0;                      // printed only when > 0
  double elapsed_ms_per_iteration = 0;              // averaged over the iterations since the last log line
  std::optional<double> throughput_tflops_per_gpu;  // set only with --log-throughput
  std::optional<double> learning_rate;              // Megatron omits it on ranks without trainable params
  std::optional<double> decoupled_learning_rate;    // --decoupled-lr's group: TensorBoard/JSONL only, not printed
  int64_t global_batch_size = 0;
  // ("lm loss", average over the interval's non-skipped iterations), in print order.
  std::vector<std::pair<std::string, double>> losses;
  double loss_scale = 1.0;  // 1.0 without fp16 dynamic scaling
  std::optional<double> grad_norm;
  std::optional<int64_t> num_zeros_in_grad;  // --log-num-zeros-in-grad
  std::optional<double> params_norm;         // --log-params-norm
  int64_t skipped_iterations = 0;
  int64_t nan_iterations = 0;
  std::optional<double> tokens_per_second;  // gptrain extra, appended last
};

// "2026-08-22 15:22:22.123456" in the local time zone (Python's datetime.now().strftime(
// '%Y-%m-%d %H:%M:%S.%f')).
std::string format_log_timestamp(std::chrono::system_clock::time_point t);

// The whole iteration line, no trailing newline.
std::string format_iteration_line(const IterationLogValues& v);

// Which evaluation a validation line reports (all three print "validation loss at ...", as Megatron).
enum class EvalKind { during_training, final_validation, final_test };

// "iteration 1000" / "iteration 1000 on validation set" / "iteration 1000 on test set".
std::string eval_prefix(int64_t iteration, EvalKind kind);

// " validation loss at {prefix} | {name} value: {:.6E} | {name} PPL: {:.6E} | " per loss (with its
// trailing space), PPL = exp(min(20, loss)).
// set_suffix: "-NAME" / "-INDEX" of one of --multiple-validation-sets (" validation-NAME loss at ..."), as Megatron.
std::string format_validation_line(const std::string& prefix, const std::vector<std::pair<std::string, double>>& losses,
                                   const std::string& set_suffix = "");

// The three printed lines: dashes of the line's length + 1, the line, the dashes, joined by '\n'
// (no trailing newline).
std::string format_validation_block(const std::string& prefix,
                                    const std::vector<std::pair<std::string, double>>& losses,
                                    const std::string& set_suffix = "");

// exp(min(20, loss)) with Python's min semantics (a NaN loss gives exp(20)).
double validation_ppl(double loss);

}  // namespace gptrain::metrics
