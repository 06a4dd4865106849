#include "core/metrics/progress_log.h"

#include "core/common/error.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

namespace gptrain::metrics {

namespace {

constexpr const char* kTimeFormat = "%Y-%m-%d %H:%M:%S";

std::string file_of(const std::string& save_dir) { return (std::filesystem::path(save_dir) / "progress.txt").string(); }

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string piece;
  while (std::getline(ss, piece, '\t')) out.push_back(piece);
  return out;
}

// The value after "Name: " (Megatron's _get_field: what follows the first ": ").
std::string field(const std::string& piece) {
  const auto at = piece.find(": ");
  return at == std::string::npos ? std::string() : piece.substr(at + 2);
}

}  // namespace

std::string progress_line(std::chrono::system_clock::time_point t, int world_size, const std::string& event) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  check(localtime_r(&tt, &local) != nullptr, "progress_line: time out of range");
  char stamp[32];
  std::strftime(stamp, sizeof stamp, kTimeFormat, &local);
  const char* job = std::getenv("SLURM_JOB_ID");
  return fmt::format("{}\tJob ID: {}\t# GPUs: {}\t{}\n", stamp, job ? job : "", world_size, event);
}

void append_progress(const std::string& save_dir, int world_size, const std::string& event) {
  std::error_code ec;
  std::filesystem::create_directories(save_dir, ec);
  const std::string path = file_of(save_dir);
  std::ofstream f(path, std::ios::app);
  f << progress_line(std::chrono::system_clock::now(), world_size, event);
  f.flush();
  check(bool(f), "--log-progress: cannot append to {}", path);
}

ProgressStart progress_start(const std::string& save_dir, int world_size) {
  const std::string path = file_of(save_dir);
  std::ifstream f(path);
  check(bool(f), "--log-progress: cannot read {}", path);
  // Plain values, not optionals: GCC's -Wmaybe-uninitialized misreads optionals in this loop.
  bool started = false, pending = false;
  std::string start_time;
  double start_flops = 0.0, latest = 0.0, uncommitted = 0.0;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    const std::vector<std::string> t = split_tabs(line);
    if (t.size() < 4) fail("{}:{}: expected at least 4 tab-separated fields, got {}", path, lineno, t.size());
    auto number = [&](std::size_t i) {
      if (i >= t.size()) fail("{}:{}: expected a field {} in '{}'", path, lineno, i + 1, line);
      char* end = nullptr;
      const std::string v = field(t[i]);
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') fail("{}:{}: field {} '{}' is not a number", path, lineno, i + 1, t[i]);
      return x;
    };
    const int world = int(number(2));
    if (t[3] == "Saved checkpoint") {
      latest = number(7);
    } else if (t[3] == "Saving async checkpoint") {
      uncommitted = number(7);
      pending = true;
    } else if (t[3] == "Saved async checkpoint" && pending) {
      latest = uncommitted;
      pending = false;
    }
    if (world != world_size) {  // a job of another size: the search starts again
      started = false;
      continue;
    }
    if (t[3] == "Starting job" && !started) {
      started = true;
      start_time = t[0];
      start_flops = latest;
    }
  }
  check(started, "{}: no 'Starting job' line of a job with {} processes", path, world_size);
  std::tm tm{};
  std::istringstream in(start_time);
  in >> std::get_time(&tm, kTimeFormat);
  check(!in.fail(), "{}: '{}' is not a time ({})", path, start_time, kTimeFormat);
  tm.tm_isdst = -1;
  return {std::chrono::system_clock::from_time_t(std::mktime(&tm)), start_flops};
}

std::string saved_checkpoint_event(bool async, int64_t iteration, double job_tflops_per_gpu,
                                   double cumulative_tflops_per_gpu, double flops_so_far, double tokens_so_far) {
  return fmt::format(
      "{}\tIteration: {}\tJob throughput: {:.1f} TFLOP/s/GPU\tCumulative throughput: {:.1f} TFLOP/s/GPU\t"
      "Floating-point operations: {:.2e}\tTokens (in billions): {:.2f}",
      async ? "Saving async checkpoint" : "Saved checkpoint", iteration, job_tflops_per_gpu, cumulative_tflops_per_gpu,
      flops_so_far, tokens_so_far / 1e9);
}

}  // namespace gptrain::metrics
