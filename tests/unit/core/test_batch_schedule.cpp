// The global batch of each iteration (core/schedule/batch_schedule.h) against Megatron's rules worked by
// hand: the classic ramp (n = (gbs - start) / incr increments over `samples`, batch = start + incr *
// int(consumed / (samples / n)) while consumed <= samples), update_train_iters, the step schedule in
// tokens, and the rounding of --decrease-batch-size-if-needed. The flag checks are in test_config.cpp.
#include "core/schedule/batch_schedule.h"
#include "error_text.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gptrain;
using gptrain::test::contains;
using schedule::BatchRampup;
using schedule::GlobalBatchSchedule;

namespace {}  // namespace

TEST_CASE("batch ramp-up: the batch after each number of consumed samples") {
  // gbs 64 from 16 by 16 over 300 samples: 3 increments, one per 100 samples.
  const GlobalBatchSchedule s(64, 4, 1, false, BatchRampup{16, 16, 300});
  REQUIRE(s.varies());
  const std::vector<std::pair<int64_t, int64_t>> want{{0, 16},   {99, 16},  {100, 32}, {199, 32},
                                                      {200, 48}, {299, 48}, {300, 64}, {301, 64}};
  for (auto [consumed, batch] : want) {
    CHECK(s.batch_size(consumed) == batch);
    CHECK(s.running_batch_size(consumed) == batch);
    CHECK(s.num_micro_batches(consumed) == batch / 4);
  }
  // A fractional number of samples per increment: 4 increments over 10 samples = 2.5 each.
  const GlobalBatchSchedule f(40, 8, 1, false, BatchRampup{8, 8, 10});
  const std::vector<std::pair<int64_t, int64_t>> frac{{0, 8},  {2, 8},  {3, 16},  {5, 24},
                                                      {7, 24}, {8, 32}, {10, 40}, {11, 40}};
  for (auto [consumed, batch] : frac) CHECK(f.batch_size(consumed) == batch);
  CHECK(s.max_num_micro_batches() == 16);
  CHECK(s.eval_batch_size() == 64);
}

TEST_CASE("batch ramp-up: iterations of a --train-samples run (update_train_iters)") {
  const GlobalBatchSchedule s(64, 4, 1, false, BatchRampup{16, 16, 300});
  // Ramp: 7 x 16 (0..112), 3 x 32 (..208), 2 x 48 (..304 > 300); then (1000 - 304) // 64 = 10.
  CHECK(s.train_iters(1000) == 22);
  CHECK(s.samples_consumed(7) == 112);
  CHECK(s.samples_consumed(10) == 208);
  CHECK(s.samples_consumed(12) == 304);
  CHECK(s.samples_consumed(22) == 304 + 10 * 64);
  // The ramp loop also stops once past --train-samples: 0, 16, 32, 48 <= 50, so 4 iterations.
  CHECK(s.train_iters(50) == 4);
  const GlobalBatchSchedule f(40, 8, 1, false, BatchRampup{8, 8, 10});
  CHECK(f.train_iters(100) == 3);  // 8 (at 0), 32 (at 8), then 60 // 40 = 1
  // Constant batch: train_samples // gbs.
  CHECK(GlobalBatchSchedule(64, 4, 1, false).train_iters(1000) == 15);
}

TEST_CASE("decrease-batch-size-if-needed rounds the running batch down, not the iteration count") {
  // mbs 4 x DP 2 = rounds of 8: the ramp 20, 42, 64 runs as 16, 40, 64.
  const GlobalBatchSchedule s(64, 4, 2, true, BatchRampup{20, 22, 100});
  CHECK(s.batch_size(0) == 20);
  CHECK(s.running_batch_size(0) == 16);
  CHECK(s.num_micro_batches(0) == 2);
  CHECK(s.running_batch_size(50) == 40);
  CHECK(s.running_batch_size(101) == 64);
  // Iterations count the un-rounded batches (20 below 50 samples, 42 below 100): 0 -> 20 -> 40 -> 60 -> 102,
  // then (1000 - 102) // 64 = 14.
  CHECK(s.train_iters(1000) == 4 + 14);
  // while the run consumes the rounded ones: 0 -> 16 -> 32 -> 48 -> 64 -> 104 -> 168.
  CHECK(s.samples_consumed(6) == 168);
  const std::string err = test::error_text([] {
    GlobalBatchSchedule(64, 4, 2, false, BatchRampup{20, 22, 100}).running_batch_size(0);
  });
  CHECK(contains(err, "global batch size 20 at 0 consumed samples (--rampup-batch-size) is not divisible"));
  CHECK(contains(err, "--decrease-batch-size-if-needed"));
  // Constant batch 30 with rounds of 8: runs 24 (3 micro-batches); iterations still 1000 // 30.
  const GlobalBatchSchedule c(30, 4, 2, true);
  CHECK(c.running_batch_size(12345) == 24);
  CHECK(c.num_micro_batches(0) == 3);
  CHECK(c.eval_batch_size() == 24);
  CHECK(c.train_iters(1000) == 33);
  CHECK(c.samples_consumed(3) == 72);
  CHECK(contains(test::error_text([] { GlobalBatchSchedule(30, 4, 2, false); }), "must be divisible"));
  CHECK(contains(test::error_text([] { GlobalBatchSchedule(6, 4, 2, true); }), "rounds down to 0"));
}

TEST_CASE("batch ramp-up: flag values and their checks") {
  const BatchRampup r = schedule::parse_rampup_batch_size({"32", "32", "2000000"});
  CHECK((r.start == 32 && r.increment == 32 && r.samples == 2000000));
  CHECK(contains(test::error_text([] { schedule::parse_rampup_batch_size({"32", "32"}); }), "takes 3 values"));
  CHECK(contains(test::error_text([] {
                   schedule::parse_rampup_batch_size({"32", "x", "5"});
                 }),
                 "'x' is not an integer"));
  CHECK(contains(test::error_text([] {
                   schedule::parse_rampup_batch_size({"0", "8", "5"});
                 }),
                 "start batch size must be positive"));
  CHECK(contains(test::error_text([] {
                   schedule::parse_rampup_batch_size({"8", "0", "5"});
                 }),
                 "increment must be positive"));
  CHECK(contains(test::error_text([] {
                   schedule::parse_rampup_batch_size({"8", "8", "0"});
                 }),
                 "ramp-up samples must be positive"));
  CHECK(contains(test::error_text([] {
                   GlobalBatchSchedule(64, 1, 1, false, BatchRampup{64, 8, 10});
                 }),
                 "must be smaller than --global-batch-size"));
  CHECK(contains(test::error_text([] {
                   GlobalBatchSchedule(64, 1, 1, false, BatchRampup{16, 10, 10});
                 }),
                 "is not divisible by the increment"));
}

TEST_CASE("step batch-size schedule: token thresholds with suffixes, samples by floor division") {
  // seq length 100: 1K tokens = 10 samples, 2.5k = 25 samples; commas separate like spaces.
  const auto steps = schedule::parse_step_batch_size_schedule(" 2.5k:32, 0:8 1K:16 ", 100);
  REQUIRE(steps.size() == 3);
  CHECK((steps[0].threshold == 0 && steps[0].batch_size == 8));
  CHECK((steps[1].threshold == 10 && steps[1].batch_size == 16));
  CHECK((steps[2].threshold == 25 && steps[2].batch_size == 32));
  CHECK(schedule::parse_step_batch_size_schedule("0:768 250B:1536", 2048)[1].threshold == 122070312);
  CHECK(schedule::parse_step_batch_size_schedule("0:1k 1.5M:2K", 1000)[1].threshold == 1500);
  CHECK(schedule::parse_step_batch_size_schedule("0:1k 1.5M:2K", 1000)[1].batch_size == 2000);
  const GlobalBatchSchedule s(32, 4, 1, false, std::nullopt, steps);
  const std::vector<std::pair<int64_t, int64_t>> want{{0, 8}, {9, 8}, {10, 16}, {24, 16}, {25, 32}, {1000, 32}};
  for (auto [consumed, batch] : want) CHECK(s.batch_size(consumed) == batch);
  // 8 (at 0), 8 (at 8), 16 (at 16) reach 32 >= 25; then (100 - 32) // 32 = 2.
  CHECK(s.train_iters(100) == 5);
  CHECK(s.train_iters(20) == 2);  // the batch of 16 at 16 would pass 20: a partial batch is dropped
  auto err = [](const std::string& text) {
    return test::error_text([&] { schedule::parse_step_batch_size_schedule(text, 100); });
  };
  CHECK(contains(err("0:8 16"), "expected THRESHOLD:BATCH_SIZE"));
  CHECK(contains(err("0:8 abc:16"), "'abc' is not a number"));
  CHECK(contains(err("1K:8"), "first threshold must be 0"));
  CHECK(contains(err("0:8 50:16"), "strictly increasing"));  // 50 tokens = 0 samples
  CHECK(contains(err("0:8 1K:4"), "must not decrease"));
  CHECK(contains(err("0:0"), "batch size must be positive"));
  CHECK(contains(err(" "), "no entries"));
  CHECK(contains(test::error_text([&] { GlobalBatchSchedule(32, 4, 1, true, std::nullopt, steps); }),
                 "exclude each other"));
}
