// --profile (Megatron's semantics): on the ranks of --profile-ranks, the iterations whose completed
// count runs from --profile-step-start to --profile-step-end are profiled -- the window opens at the top
// of the iteration that starts with `start` iterations complete and closes once `end` are complete
// (log lines number these iterations start+1 .. end). While it is open, the ranges the loop and the
// model mark (profile_range.h) go to the backend:
// - CUDA: cudaProfilerStart / cudaProfilerStop at the window's edges, ranges as NVTX push/pop, so
//   `nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop` records exactly the window;
// - CPU: wall time per range, printed as one table per profiled rank when the window closes (or when
//   the run ends first, marked as cut short).
#pragma once

#include "core/config/checkpoint_args.h"
#include "core/common/profile_range.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gptrain::metrics {

// Where a profile's ranges go and what it does at the window's edges.
class ProfileBackend : public RangeSink {
 public:
  virtual void window_begin() = 0;
  // header: which rank and iterations; wall_seconds: the window's length. Prints its report, if any.
  virtual void window_end(const std::string& header, double wall_seconds) = 0;
  virtual const char* describe() const = 0;
};

// The wall-time table backend.
std::unique_ptr<ProfileBackend> make_timing_profile_backend();

class Profiler {
 public:
  // Null when --profile is off or world_rank is not one of --profile-ranks (then no range costs more
  // than a pointer load). cuda: the training backend runs on a GPU (NVTX), else the timing table.
  static std::unique_ptr<Profiler> from_args(const LoggingArgs& args, int world_rank, bool cuda);
  Profiler(std::unique_ptr<ProfileBackend> backend, int64_t step_start, int64_t step_end, int world_rank);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // At the top of the loop, `completed` iterations done: opens the window at step_start.
  void iteration_starting(int64_t completed);
  // After an iteration (its evaluation and save included): closes the window at step_end.
  void iteration_done(int64_t completed);
  // The loop has ended: closes a window still open.
  void run_done(int64_t completed);
  bool window_open() const { return open_; }

 private:
  void close(int64_t completed, bool cut_short);

  std::unique_ptr<ProfileBackend> backend_;
  int64_t start_, end_;
  int rank_;
  bool open_ = false;
  bool closed_ = false;  // the window has opened and closed
  std::chrono::steady_clock::time_point opened_at_;
};

}  // namespace gptrain::metrics

// The NVTX + cudaProfilerStart/Stop backend (profiler_nvtx_cuda.cpp, in the CUDA backend's library,
// core/common/plugin.h); the caller owns it.
extern "C" gptrain::metrics::ProfileBackend* gptrain_cuda_make_nvtx_profile_backend();
