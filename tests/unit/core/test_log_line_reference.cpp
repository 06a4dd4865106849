// Hidden: gptrain's log lines vs Python's own str.format of Megatron's format strings over random values
// (tests/python/log_line_ref.py), run by tests/integration/sched_log_line_reference.sh with TZ=UTC.
#include "core/metrics/log_line.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

using namespace gptrain::metrics;

TEST_CASE("log line: matches Python's formatting of random values", "[.log_line_reference]") {
  const char* path = std::getenv("GPTRAIN_LOG_LINE_REFERENCE");
  REQUIRE(path != nullptr);
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json ref = nlohmann::json::parse(in);
  auto opt = [](const nlohmann::json& j, const char* k) {
    return j[k].is_null() ? std::optional<double>() : std::optional<double>(j[k].get<double>());
  };
  int lines = 0;
  for (const auto& r : ref) {
    const auto& j = r.at("values");
    IterationLogValues v;
    v.timestamp = std::chrono::system_clock::time_point(std::chrono::microseconds(j["time_us"].get<int64_t>()));
    v.iteration = j["iteration"];
    v.train_iters = j["train_iters"];
    v.consumed_samples = j["consumed_samples"];
    v.skipped_samples = j["skipped_samples"];
    v.elapsed_ms_per_iteration = j["elapsed_ms"];
    v.throughput_tflops_per_gpu = opt(j, "throughput");
    v.learning_rate = opt(j, "lr");
    v.global_batch_size = j["gbs"];
    for (const auto& l : j["losses"]) v.losses.emplace_back(l[0].get<std::string>(), l[1].get<double>());
    v.loss_scale = j["loss_scale"];
    v.grad_norm = opt(j, "grad_norm");
    if (!j["num_zeros"].is_null()) v.num_zeros_in_grad = j["num_zeros"].get<int64_t>();
    v.params_norm = opt(j, "params_norm");
    v.skipped_iterations = j["skipped_iters"];
    v.nan_iterations = j["nan_iters"];
    CHECK(format_iteration_line(v) == r.at("line").get<std::string>());
    std::vector<std::pair<std::string, double>> val;
    for (const auto& l : r.at("val_losses")) val.emplace_back(l[0].get<std::string>(), l[1].get<double>());
    CHECK(format_validation_line(r.at("prefix").get<std::string>(), val) == r.at("val_line").get<std::string>());
    ++lines;
  }
  WARN("compared " << lines << " iteration lines and " << lines << " validation lines");
  CHECK(lines >= 1000);
}
