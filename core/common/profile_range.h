// Named ranges around the phases of training (forward, backward, each layer, collectives, the optimizer
// step), marked where the work happens and recorded by whichever profiler is active: NVTX ranges on
// CUDA, wall-time sections on CPU (core/metrics/profiler.h). Outside a --profile window no sink is
// installed and a range costs one pointer load. Header-only, in the base layer, so the model can mark.
//
//   {
//     ProfileRange r("layer", layer_index);  // "layer 3"
//     ...
//   }
//
// Ranges nest (a stack per process); they are opened and closed on the training thread only. Besides the
// profiler, a second sink sees every range: Megatron's timers (--timing-log-level, core/metrics/megatron_timers.h),
// which also see TimerRange, a phase named after one of Megatron's timers that --profile does not show.
#pragma once

namespace gptrain {

// What an active profiler does with ranges.
class RangeSink {
 public:
  virtual ~RangeSink() = default;
  // index >= 0 names a numbered instance ("layer" 3 -> "layer 3"); name is a string literal.
  virtual void push(const char* name, int index) = 0;
  virtual void pop() = 0;
};

namespace profile_detail {
// The process's active sink (null: not profiling). With the logger, the only process-wide mutable
// state: ranges are marked deep inside the model, which should not carry a profiler around.
inline RangeSink* active_sink = nullptr;
inline RangeSink* timer_sink = nullptr;  // Megatron's timers (null: --timing-log-level 0)
}  // namespace profile_detail

inline RangeSink* active_range_sink() { return profile_detail::active_sink; }
// Installed by Profiler for its window; null uninstalls.
inline void set_active_range_sink(RangeSink* s) { profile_detail::active_sink = s; }
inline RangeSink* active_timer_sink() { return profile_detail::timer_sink; }
inline void set_active_timer_sink(RangeSink* s) { profile_detail::timer_sink = s; }

class ProfileRange {
 public:
  explicit ProfileRange(const char* name, int index = -1) : sink_(active_range_sink()), timers_(active_timer_sink()) {
    if (sink_ != nullptr) sink_->push(name, index);
    if (timers_ != nullptr) timers_->push(name, index);
  }
  ~ProfileRange() { end(); }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;
  // Closes the range before the end of its scope (later calls do nothing).
  void end() {
    if (timers_ != nullptr) timers_->pop();
    if (sink_ != nullptr) sink_->pop();
    sink_ = timers_ = nullptr;
  }

 private:
  RangeSink* sink_;    // the sink it was opened in: the pop goes there even if the window has ended
  RangeSink* timers_;  // the same for the timer sink
};

// A range that only Megatron's timers see (name: one of theirs, core/metrics/megatron_timers.h).
class TimerRange {
 public:
  explicit TimerRange(const char* name) : timers_(active_timer_sink()) {
    if (timers_ != nullptr) timers_->push(name, -1);
  }
  ~TimerRange() {
    if (timers_ != nullptr) timers_->pop();
  }
  TimerRange(const TimerRange&) = delete;
  TimerRange& operator=(const TimerRange&) = delete;

 private:
  RangeSink* timers_;
};

}  // namespace gptrain
