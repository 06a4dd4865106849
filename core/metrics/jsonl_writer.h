// Machine-readable metrics: one JSON object per line per log event, flushed after every line so a
// crashed or running job's file is always complete up to its last line.
//
// Records made by the helpers below (keys absent when the value is not set; NaN/inf become null):
//   {"event": "train", "time": unix seconds, "iteration", "train_iters", "consumed_samples",
//    "skipped_samples", "elapsed_ms_per_iteration", "throughput_tflops_per_gpu", "learning_rate",
//    "decoupled_learning_rate", "global_batch_size", "losses": {"lm loss": x, ...}, "loss_scale", "grad_norm",
//    "num_zeros_in_grad", "params_norm", "skipped_iterations", "nan_iterations", "tokens_per_second"}
//   {"event": "validation" | "test", "time", "iteration", "consumed_samples", "final": bool,
//    "losses": {"lm loss": x}, "ppl": {"lm loss": exp(min(20, x))}}
#pragma once

#include "core/metrics/log_line.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace gptrain::metrics {

class JsonlWriter {
 public:
  // Creates parent directories. append = true continues an existing file (resumed runs).
  explicit JsonlWriter(const std::string& path, bool append = false);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  void write(const nlohmann::json& record);  // one line, then flush
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

nlohmann::json train_record(const IterationLogValues& v);
// kind: EvalKind::during_training / final_validation give "validation", final_test gives "test".
// validation_set: the name of one of --multiple-validation-sets (recorded when not empty).
nlohmann::json eval_record(int64_t iteration, int64_t consumed_samples, EvalKind kind,
                           const std::vector<std::pair<std::string, double>>& losses,
                           const std::string& validation_set = "");

}  // namespace gptrain::metrics
