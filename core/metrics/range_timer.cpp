#include "core/metrics/range_timer.h"

#include <fmt/format.h>

#include <cstring>

namespace gptrain::metrics {

int RangeTimer::child(int parent, const char* name, int index) {
  std::vector<int>& siblings = parent < 0 ? roots_ : nodes_[parent].children;
  for (int c : siblings) {
    const Node& n = nodes_[c];
    // Names are literals: the pointer usually matches; the text decides.
    if (n.index == index && (n.name == name || std::strcmp(n.name, name) == 0)) return c;
  }
  nodes_.push_back(Node{name, index, parent, {}});
  const int id = static_cast<int>(nodes_.size()) - 1;
  // nodes_ may have moved: look the sibling list up again.
  (parent < 0 ? roots_ : nodes_[parent].children).push_back(id);
  return id;
}

void RangeTimer::push(const char* name, int index) {
  const int parent = open_.empty() ? -1 : open_.back().first;
  const int id = child(parent, name, index);
  open_.emplace_back(id, Clock::now());
}

void RangeTimer::pop() {
  if (open_.empty()) return;
  const auto [id, start] = open_.back();
  open_.pop_back();
  Node& n = nodes_[id];
  n.count += 1;
  n.total += std::chrono::duration<double>(Clock::now() - start).count();
}

void RangeTimer::reset() {
  nodes_.clear();
  roots_.clear();
  open_.clear();
}

void RangeTimer::collect(int node, int depth, std::vector<Row>& out) const {
  const Node& n = nodes_[node];
  Row r;
  r.name = n.index >= 0 ? fmt::format("{} {}", n.name, n.index) : std::string(n.name);
  r.depth = depth;
  r.count = n.count;
  r.total_seconds = n.total;
  out.push_back(std::move(r));
  for (int c : n.children) collect(c, depth + 1, out);
}

std::vector<RangeTimer::Row> RangeTimer::rows() const {
  std::vector<Row> out;
  for (int r : roots_) collect(r, 0, out);
  return out;
}

std::string format_range_table(const std::vector<RangeTimer::Row>& rows, double window_seconds) {
  std::size_t width = 5;
  for (const RangeTimer::Row& r : rows) width = std::max(width, 2 * std::size_t(r.depth) + r.name.size());
  std::string s =
      fmt::format("{:<{}}  {:>8}  {:>12}  {:>11}  {:>8}\n", "range", width, "count", "total ms", "mean ms", "% window");
  for (const RangeTimer::Row& r : rows) {
    const double ms = r.total_seconds * 1e3;
    const double mean = r.count > 0 ? ms / double(r.count) : 0.0;
    const double pct = window_seconds > 0 ? 100.0 * r.total_seconds / window_seconds : 0.0;
    s += fmt::format("{:<{}}  {:>8}  {:>12.3f}  {:>11.3f}  {:>8.1f}\n",
                     std::string(2 * std::size_t(r.depth), ' ') + r.name, width, r.count, ms, mean, pct);
  }
  return s;
}

}  // namespace gptrain::metrics
