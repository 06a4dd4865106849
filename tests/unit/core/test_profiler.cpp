// --profile: the range timer (counts, nesting, measured time, the table), the window's iterations
// (Megatron's completed-iteration counter, start inclusive, end exclusive) and the rank filter. The
// flags' parsing and validation: test_config.cpp.
#include "core/metrics/profiler.h"
#include "core/metrics/range_timer.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace gptrain;
using metrics::RangeTimer;

namespace {

const RangeTimer::Row* find_row(const std::vector<RangeTimer::Row>& rows, const std::string& name, int depth) {
  for (const auto& r : rows)
    if (r.name == name && r.depth == depth) return &r;
  return nullptr;
}

// Records which ranges reach the active sink.
struct Recorder final : metrics::ProfileBackend {
  std::vector<std::string> pushed;
  int begins = 0, ends = 0;
  std::string last_header;
  void push(const char* name, int) override { pushed.push_back(name); }
  void pop() override {}
  void window_begin() override { ++begins; }
  void window_end(const std::string& header, double) override {
    ++ends;
    last_header = header;
  }
  const char* describe() const override { return "recorder"; }
};

// A profiler whose backend is a Recorder (owned by the profiler).
std::pair<std::unique_ptr<metrics::Profiler>, Recorder*> recorded(int64_t start, int64_t end, int rank) {
  auto rec = std::make_unique<Recorder>();
  Recorder* r = rec.get();
  return {std::make_unique<metrics::Profiler>(std::move(rec), start, end, rank), r};
}

}  // namespace

TEST_CASE("profiler: the range timer counts nested ranges by path and measures wall time") {
  RangeTimer t;
  for (int it = 0; it < 2; ++it) {
    t.push("step", -1);
    for (int mb = 0; mb < 3; ++mb) {
      t.push("forward", -1);
      for (int l = 0; l < 2; ++l) {
        t.push("layer", l);
        if (l == 1 && mb == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        t.pop();
      }
      t.pop();
      t.push("backward", -1);
      t.push("layer", 1);  // the same name under another parent is another row
      t.pop();
      t.pop();
    }
    t.pop();
  }
  t.pop();  // unmatched: ignored
  const auto rows = t.rows();
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].name == "step");
  CHECK(rows[0].count == 2);
  const RangeTimer::Row* fwd = find_row(rows, "forward", 1);
  REQUIRE(fwd != nullptr);
  CHECK(fwd->count == 6);
  const RangeTimer::Row* l1 = &rows[3];
  CHECK(rows[2].name == "layer 0");
  CHECK(l1->name == "layer 1");
  CHECK(l1->depth == 2);
  CHECK(l1->count == 6);
  CHECK(l1->total_seconds >= 0.040);  // two 20 ms sleeps
  CHECK(rows[4].name == "backward");
  CHECK(rows[5].name == "layer 1");
  CHECK(rows[5].depth == 2);
  // A parent covers its children.
  CHECK(fwd->total_seconds >= l1->total_seconds);
  CHECK(rows[0].total_seconds >= fwd->total_seconds);

  const std::string table = metrics::format_range_table(rows, rows[0].total_seconds);
  CHECK(table.find("range") == 0);
  CHECK(table.find("\n    layer 1 ") != std::string::npos);
  CHECK(table.find("100.0\n") != std::string::npos);  // the step is the whole window

  t.reset();
  CHECK(t.rows().empty());
}

TEST_CASE("profiler: the window covers iterations start+1..end, ranges cost nothing outside it") {
  auto [profiler, r] = recorded(2, 4, 0);
  metrics::Profiler& p = *profiler;
  for (int64_t done = 0; done < 6; ++done) {
    p.iteration_starting(done);
    CHECK(p.window_open() == (done >= 2 && done < 4));
    CHECK((active_range_sink() != nullptr) == p.window_open());
    { ProfileRange step("step"); }
    p.iteration_done(done + 1);
  }
  p.run_done(6);
  CHECK(r->begins == 1);
  CHECK(r->ends == 1);
  CHECK(r->pushed.size() == 2);  // iterations 3 and 4
  CHECK(r->last_header == "profile of rank 0: iterations 3..4 (2 iterations)");
  CHECK(active_range_sink() == nullptr);
}

TEST_CASE("profiler: a run ending inside the window closes it, marked cut short") {
  auto [profiler, r] = recorded(1, 10, 3);
  metrics::Profiler& p = *profiler;
  for (int64_t done = 0; done < 3; ++done) {
    p.iteration_starting(done);
    p.iteration_done(done + 1);
  }
  CHECK(p.window_open());
  p.run_done(3);
  CHECK(!p.window_open());
  CHECK(r->ends == 1);
  CHECK(r->last_header ==
        "profile of rank 3: iterations 2..3 (2 iterations, cut short: the run ended before iteration 10)");
  CHECK(active_range_sink() == nullptr);
}

TEST_CASE("profiler: only --profile on a listed rank makes a profiler") {
  LoggingArgs a;
  CHECK(metrics::Profiler::from_args(a, 0, false) == nullptr);  // --profile off
  a.profile = true;
  a.profile_ranks = {1, 3};
  CHECK(metrics::Profiler::from_args(a, 0, false) == nullptr);
  CHECK(metrics::Profiler::from_args(a, 2, false) == nullptr);
  CHECK(metrics::Profiler::from_args(a, 3, false) != nullptr);
}
