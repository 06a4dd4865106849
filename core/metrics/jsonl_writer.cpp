#include "core/metrics/jsonl_writer.h"

#include "core/common/error.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace gptrain::metrics {
namespace {

// JSON has no NaN/inf: write null so every line stays parseable.
nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

double unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

JsonlWriter::JsonlWriter(const std::string& path, bool append) : path_(path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    check(!ec, "{}: cannot create the directory {}: {}", path, parent.string(), ec.message());
  }
  file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  check(file_ != nullptr, "{}: cannot open the metrics file for writing: {}", path, std::strerror(errno));
}

JsonlWriter::~JsonlWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlWriter::write(const nlohmann::json& record) {
  std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  // errno is read after the calls: check()'s arguments are evaluated in no set order.
  const bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  const int e = errno;
  check(ok, "{}: write failed: {}", path_, std::strerror(e));
}

nlohmann::json train_record(const IterationLogValues& v) {
  nlohmann::json j;
  j["event"] = "train";
  j["time"] = unix_seconds(v.timestamp);
  j["iteration"] = v.iteration;
  j["train_iters"] = v.train_iters;
  j["consumed_samples"] = v.consumed_samples;
  j["skipped_samples"] = v.skipped_samples;
  j["elapsed_ms_per_iteration"] = number(v.elapsed_ms_per_iteration);
  if (v.throughput_tflops_per_gpu) j["throughput_tflops_per_gpu"] = number(*v.throughput_tflops_per_gpu);
  if (v.learning_rate) j["learning_rate"] = number(*v.learning_rate);
  if (v.decoupled_learning_rate) j["decoupled_learning_rate"] = number(*v.decoupled_learning_rate);
  j["global_batch_size"] = v.global_batch_size;
  nlohmann::json losses = nlohmann::json::object();
  for (const auto& [name, value] : v.losses) losses[name] = number(value);
  j["losses"] = losses;
  j["loss_scale"] = number(v.loss_scale);
  if (v.grad_norm) j["grad_norm"] = number(*v.grad_norm);
  if (v.num_zeros_in_grad) j["num_zeros_in_grad"] = *v.num_zeros_in_grad;
  if (v.params_norm) j["params_norm"] = number(*v.params_norm);
  j["skipped_iterations"] = v.skipped_iterations;
  j["nan_iterations"] = v.nan_iterations;
  if (v.tokens_per_second) j["tokens_per_second"] = number(*v.tokens_per_second);
  return j;
}

nlohmann::json eval_record(int64_t iteration, int64_t consumed_samples, EvalKind kind,
                           const std::vector<std::pair<std::string, double>>& losses,
                           const std::string& validation_set) {
  nlohmann::json j;
  j["event"] = kind == EvalKind::final_test ? "test" : "validation";
  if (!validation_set.empty()) j["validation_set"] = validation_set;
  j["time"] = unix_seconds(std::chrono::system_clock::now());
  j["iteration"] = iteration;
  j["consumed_samples"] = consumed_samples;
  j["final"] = kind != EvalKind::during_training;
  nlohmann::json values = nlohmann::json::object(), ppl = nlohmann::json::object();
  for (const auto& [name, value] : losses) {
    values[name] = number(value);
    ppl[name] = number(validation_ppl(value));
  }
  j["losses"] = values;
  j["ppl"] = ppl;
  return j;
}

}  // namespace gptrain::metrics
