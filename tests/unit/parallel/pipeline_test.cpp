// Pipeline stage split (even, uneven, interleaved) and schedules: every schedule runs each
// (micro-batch, chunk) forward and backward once, and the ranks' lists together respect the
// dependencies (each op runs once its inputs exist); pipeline_p2p_test.cpp checks the batched
// transfers that carry those inputs.
#include "core/common/error.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/pipeline/pipeline_schedule.h"

#include <catch2/catch.hpp>

#include <set>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {
// Simulates all ranks; returns true when every list completes.
bool runs_without_deadlock(int pp, int m, int v) {
  std::vector<std::vector<PipeOp>> lists;
  for (int r = 0; r < pp; ++r) lists.push_back(pipeline_schedule(pp, r, m, v));
  const int stages = pp * v;
  std::set<std::tuple<bool, int, int>> done;  // (forward, mb, virtual stage)
  std::vector<std::size_t> pos(pp, 0);
  for (;;) {
    bool progressed = false, all_done = true;
    for (int r = 0; r < pp; ++r) {
      if (pos[r] == lists[r].size()) continue;
      all_done = false;
      const PipeOp& op = lists[r][pos[r]];
      const int vs = op.chunk * pp + r;
      bool ready;
      if (op.forward) {
        ready = vs == 0 || done.count({true, op.microbatch, vs - 1});
      } else {
        ready =
            done.count({true, op.microbatch, vs}) && (vs == stages - 1 || done.count({false, op.microbatch, vs + 1}));
      }
      if (ready) {
        REQUIRE(done.insert({op.forward, op.microbatch, vs}).second);  // no op twice
        ++pos[r];
        progressed = true;
      }
    }
    if (all_done) return static_cast<int>(done.size()) == 2 * m * stages;
    if (!progressed) return false;
  }
}
}  // namespace

TEST_CASE("1F1B and interleaved schedules are complete and deadlock-free", "[parallel]") {
  for (int pp : {1, 2, 3, 4})
    for (int m : {1, 2, 3, 4, 8}) CHECK(runs_without_deadlock(pp, m, 1));
  for (int pp : {2, 4})
    for (int v : {2, 3})
      for (int m : {pp, 2 * pp, 3 * pp}) CHECK(runs_without_deadlock(pp, m, v));
  // 1F1B keeps at most PP - rank micro-batches in flight.
  auto ops = schedule_1f1b(4, 0, 8);
  int in_flight = 0, peak = 0;
  for (auto& op : ops) {
    in_flight += op.forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  CHECK(peak == 4);
  REQUIRE_THROWS_WITH(schedule_interleaved(2, 0, 3, 2),
                      Catch::Contains("multiple of --pipeline-model-parallel-size 2"));
}

TEST_CASE("pipeline layer split: even, uneven, interleaved", "[parallel]") {
  ParallelArgs o;
  o.pipeline_model_parallel_size = 2;
  auto c = pipeline_chunks(o, 4, 1);
  REQUIRE(c.size() == 1);
  CHECK(c[0].first == 2);
  CHECK(c[0].last == 4);
  CHECK(c[0].has_head);
  CHECK_FALSE(c[0].has_embedding);
  REQUIRE_THROWS_WITH(pipeline_chunks(o, 5, 0), Catch::Contains("do not split evenly"));

  o.pipeline_model_parallel_size = 4;
  o.decoder_first_pipeline_num_layers = 1;
  o.decoder_last_pipeline_num_layers = 3;
  std::vector<std::pair<int, int>> want = {{0, 1}, {1, 3}, {3, 5}, {5, 8}};
  for (int r = 0; r < 4; ++r) {
    auto cr = pipeline_chunks(o, 8, r);
    CHECK(cr[0].first == want[r].first);
    CHECK(cr[0].last == want[r].second);
  }
  REQUIRE_THROWS_WITH(pipeline_chunks(o, 9, 0), Catch::Contains("do not split evenly"));

  ParallelArgs iv;
  iv.pipeline_model_parallel_size = 2;
  iv.num_layers_per_virtual_pipeline_stage = 1;
  CHECK(num_model_chunks(iv, 4) == 2);
  auto r1 = pipeline_chunks(iv, 4, 1);
  REQUIRE(r1.size() == 2);
  CHECK(r1[0].first == 1);  // virtual stage 1
  CHECK(r1[1].first == 3);  // virtual stage 3
  CHECK(r1[1].has_head);
  CHECK(pipeline_chunks(iv, 4, 0)[0].has_embedding);
  REQUIRE_THROWS_WITH(num_model_chunks(iv, 5), Catch::Contains("--num-layers-per-virtual-pipeline-stage"));
}
