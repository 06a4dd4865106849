#include "core/metrics/profiler.h"

#include "core/common/log.h"
#include "core/common/plugin.h"
#include "kernels/cuda/cuda_plugin.h"
#include "core/metrics/range_timer.h"

#include <algorithm>

namespace gptrain::metrics {

namespace {

class TimingProfileBackend final : public ProfileBackend {
 public:
  void push(const char* name, int index) override { timer_.push(name, index); }
  void pop() override { timer_.pop(); }
  void window_begin() override { timer_.reset(); }
  void window_end(const std::string& header, double wall_seconds) override {
    log::report(
        fmt::format("{} ({:.3f} s wall):\n{}", header, wall_seconds, format_range_table(timer_.rows(), wall_seconds)));
  }
  const char* describe() const override { return "wall time per range, a table at the end of the window"; }

 private:
  RangeTimer timer_;
};

}  // namespace

std::unique_ptr<ProfileBackend> make_timing_profile_backend() { return std::make_unique<TimingProfileBackend>(); }

namespace {

std::unique_ptr<ProfileBackend> nvtx_profile_backend() {
  auto* make = plugin::function<decltype(gptrain_cuda_make_nvtx_profile_backend)>(
      kCudaPlugin, "gptrain_cuda_make_nvtx_profile_backend", "--profile's NVTX ranges");
  return std::unique_ptr<ProfileBackend>(make());
}

}  // namespace

std::unique_ptr<Profiler> Profiler::from_args(const LoggingArgs& a, int world_rank, bool cuda) {
  if (!a.profile) return nullptr;
  if (std::find(a.profile_ranks.begin(), a.profile_ranks.end(), world_rank) == a.profile_ranks.end()) return nullptr;
  return std::make_unique<Profiler>(cuda ? nvtx_profile_backend() : make_timing_profile_backend(), a.profile_step_start,
                                    a.profile_step_end, world_rank);
}

Profiler::Profiler(std::unique_ptr<ProfileBackend> backend, int64_t step_start, int64_t step_end, int world_rank)
    : backend_(std::move(backend)), start_(step_start), end_(step_end), rank_(world_rank) {
  log::report(
      fmt::format("--profile: rank {} profiles iterations {}..{} ({})", rank_, start_ + 1, end_, backend_->describe()));
}

Profiler::~Profiler() {
  if (open_) set_active_range_sink(nullptr);
}

void Profiler::iteration_starting(int64_t completed) {
  if (open_ || completed != start_) return;
  backend_->window_begin();
  set_active_range_sink(backend_.get());
  open_ = true;
  opened_at_ = std::chrono::steady_clock::now();
}

void Profiler::iteration_done(int64_t completed) {
  if (open_ && completed == end_) close(completed, false);
}

void Profiler::run_done(int64_t completed) {
  if (open_) {
    close(completed, true);
  } else if (!closed_) {
    log::report(fmt::format("--profile: rank {} never reached iteration {} (the run ended after iteration {})", rank_,
                            start_ + 1, completed));
  }
}

void Profiler::close(int64_t completed, bool cut_short) {
  set_active_range_sink(nullptr);
  open_ = false;
  closed_ = true;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_at_).count();
  const int64_t n = completed - start_;
  backend_->window_end(
      fmt::format("profile of rank {}: iterations {}..{} ({} iteration{}{})", rank_, start_ + 1, completed, n,
                  n == 1 ? "" : "s",
                  cut_short ? fmt::format(", cut short: the run ended before iteration {}", end_) : std::string()),
      wall);
}

}  // namespace gptrain::metrics
