// The CPU profiler's sink: wall time per range, ranges keyed by their path (the same name under two
// parents is two rows), and the table --profile prints at the end of its window:
//
//   range                                   count     total ms      mean ms  % window
//   train-step                                  2      812.402      406.201      97.3
//     forward-backward                          2      640.115      320.058      76.7
//       forward                                 8      201.337       25.167      24.1
//         layer 0                               8       80.127       10.016       9.6
//
// Host wall time only: on a device the work would be asynchronous (the CUDA profiler uses NVTX).
#pragma once

#include "core/common/profile_range.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gptrain::metrics {

class RangeTimer final : public RangeSink {
 public:
  void push(const char* name, int index) override;
  void pop() override;  // a pop with no open range (opened before reset) is ignored
  // Forgets every range, open ones included.
  void reset();

  struct Row {
    std::string name;  // "forward", "layer 3"
    int depth = 0;     // 0: opened with no range open
    int64_t count = 0;
    double total_seconds = 0.0;
  };
  // Depth-first, children in the order they were first opened.
  std::vector<Row> rows() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Node {
    const char* name;
    int index;
    int parent;  // -1: a root
    std::vector<int> children;
    int64_t count = 0;
    double total = 0.0;
  };
  int child(int parent, const char* name, int index);
  void collect(int node, int depth, std::vector<Row>& out) const;

  std::vector<Node> nodes_;
  std::vector<int> roots_;
  std::vector<std::pair<int, Clock::time_point>> open_;  // node, start
};

// The table above; window_seconds (> 0) is what the last column divides by.
std::string format_range_table(const std::vector<RangeTimer::Row>& rows, double window_seconds);

}  // namespace gptrain::metrics
