// JSONL metrics: one parseable object per line, flushed per line, NaN as null, append for resumes.
#include "core/common/error.h"
#include "core/metrics/jsonl_writer.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

using namespace gptrain::metrics;
namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("metrics jsonl: train and eval records, flushed per line, append", "[metrics]") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gptrain_jsonl_{}", getpid());
  fs::remove_all(dir);
  const fs::path path = dir / "sub" / "metrics.jsonl";
  IterationLogValues v;
  v.timestamp = std::chrono::system_clock::from_time_t(1700000000);
  v.iteration = 10;
  v.train_iters = 100;
  v.consumed_samples = 80;
  v.elapsed_ms_per_iteration = 12.5;
  v.learning_rate = 3e-4;
  v.decoupled_learning_rate = 1e-3;
  v.global_batch_size = 8;
  v.losses = {{"lm loss", 7.25}};
  v.grad_norm = std::numeric_limits<double>::quiet_NaN();
  v.tokens_per_second = 5000.0;
  {
    JsonlWriter w(path.string());
    w.write(train_record(v));
    // Visible before the writer is closed: flushed per line.
    auto lines = read_lines(path);
    REQUIRE(lines.size() == 1);
    const auto& j = lines[0];
    CHECK(j["event"] == "train");
    CHECK(j["time"] == 1700000000.0);
    CHECK(j["iteration"] == 10);
    CHECK(j["consumed_samples"] == 80);
    CHECK(j["learning_rate"] == 3e-4);
    CHECK(j["decoupled_learning_rate"] == 1e-3);
    CHECK(j["losses"]["lm loss"] == 7.25);
    CHECK(j["grad_norm"].is_null());  // NaN has no JSON spelling
    CHECK(j["tokens_per_second"] == 5000.0);
    CHECK_FALSE(j.contains("params_norm"));
    CHECK_FALSE(j.contains("throughput_tflops_per_gpu"));
    w.write(eval_record(10, 80, EvalKind::during_training, {{"lm loss", 3.0}}));
  }
  {
    JsonlWriter again(path.string(), /*append=*/true);
    again.write(eval_record(100, 800, EvalKind::final_test, {{"lm loss", 25.0}}));
  }
  const auto lines = read_lines(path);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1]["event"] == "validation");
  CHECK(lines[1]["final"] == false);
  CHECK(lines[1]["ppl"]["lm loss"] == Approx(std::exp(3.0)).epsilon(1e-15));
  CHECK(lines[2]["event"] == "test");
  CHECK(lines[2]["final"] == true);
  CHECK(lines[2]["ppl"]["lm loss"] == Approx(std::exp(20.0)).epsilon(1e-15));
  {
    JsonlWriter fresh(path.string());  // without append: starts over
  }
  CHECK(read_lines(path).empty());
  fs::remove_all(dir);
  CHECK_THROWS_AS(JsonlWriter("/proc/gptrain-no-such-dir/x.jsonl"), gptrain::Error);
}
