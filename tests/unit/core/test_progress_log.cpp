// --log-progress's progress.txt (core/metrics/progress_log.h): Megatron's line format, and where the
// cumulative throughput starts, as Megatron's get_start_time_from_progress_log reads the file.
#include "core/metrics/progress_log.h"

#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>
#include <fstream>

using namespace gptrain::metrics;

namespace {

std::chrono::system_clock::time_point local_time(int hour, int min, int sec) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 7;
  tm.tm_mday = 22;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&tm));
}

std::string saved(int64_t iteration, double flops, bool async = false) {
  return saved_checkpoint_event(async, iteration, 1.0, 2.0, flops, 1e9);
}

}  // namespace

TEST_CASE("progress log: Megatron's line and 'Saved checkpoint' event", "[progress_log]") {
  unsetenv("SLURM_JOB_ID");
  CHECK(progress_line(local_time(15, 22, 22) + std::chrono::milliseconds(900), 8, "Starting job") ==
        "2026-08-22 15:22:22\tJob ID: \t# GPUs: 8\tStarting job\n");
  setenv("SLURM_JOB_ID", "4242", 1);
  CHECK(progress_line(local_time(1, 2, 3), 16, "x") == "2026-08-22 01:02:03\tJob ID: 4242\t# GPUs: 16\tx\n");
  unsetenv("SLURM_JOB_ID");
  CHECK(saved_checkpoint_event(false, 100, 412.34, 398.96, 1.234567e18, 2.5e9) ==
        "Saved checkpoint\tIteration: 100\tJob throughput: 412.3 TFLOP/s/GPU\tCumulative throughput: 399.0 "
        "TFLOP/s/GPU\tFloating-point operations: 1.23e+18\tTokens (in billions): 2.50");
  CHECK(saved_checkpoint_event(true, 7, 0, 0, 0, 0).rfind("Saving async checkpoint\tIteration: 7\t", 0) == 0);
}

TEST_CASE("progress log: the start of the latest run of jobs of this world size", "[progress_log]") {
  const gptrain::test::ScratchDir scratch("progress_log");
  const std::string dir = scratch.fresh("save").string();
  auto write = [&](const std::vector<std::pair<int, std::string>>& lines) {
    std::ofstream f(dir + "/progress.txt");
    int minute = 0;
    for (const auto& [world, event] : lines) f << progress_line(local_time(10, minute++, 0), world, event);
  };
  // A job of 8, then two jobs of 4 (the first one's start counts, with the FLOPs of the last save before it).
  write({{8, "Starting job"},
         {8, saved(10, 1e15)},
         {4, "Starting job"},
         {4, saved(20, 2e15)},
         {4, "Starting job"},
         {4, saved(30, 3e15)}});
  ProgressStart s = progress_start(dir, 4);
  CHECK(s.time == local_time(10, 2, 0));
  CHECK(s.flops == 1e15);
  // A job of 8 in between restarts the search; an async save counts once its commit line follows.
  write({{4, "Starting job"},
         {8, "Starting job"},
         {8, saved(10, 1e15, true)},
         {8, "Saved async checkpoint\tIteration: 10"},
         {8, saved(20, 5e15, true)},
         {4, "Starting job"}});
  s = progress_start(dir, 4);
  CHECK(s.time == local_time(10, 5, 0));
  CHECK(s.flops == 1e15);  // the second async save never committed
  CHECK_THROWS_WITH(progress_start(dir, 2), Catch::Contains("no 'Starting job' line of a job with 2 processes"));
  { std::ofstream(dir + "/progress.txt") << "2026-08-22 10:00:00\tJob ID: \t# GPUs: four\tStarting job\n"; }
  CHECK_THROWS_WITH(progress_start(dir, 4), Catch::Contains("progress.txt:1: field 3 '# GPUs: four' is not a number"));
  scratch.remove();
}
