// preprocess_data's --workers budget (data/jsonl/worker_budget.h): a fixed maximum, the address-space
// limit (stacks and malloc arenas count there) and a cgroup memory limit (batches and caches), each
// refusal naming --workers, the limit and the largest count that fits.
#include "data/jsonl/worker_budget.h"

#include <catch2/catch.hpp>

using gptrain::worker_budget_error;
using gptrain::WorkerMemoryContext;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBatch = 1ull << 20;
}  // namespace

TEST_CASE("worker budget: no limits, up to the maximum") {
  const WorkerMemoryContext none;
  CHECK(worker_budget_error(1, kBatch, none).empty());
  CHECK(worker_budget_error(gptrain::kMaxPreprocessWorkers, kBatch, none).empty());
  CHECK(worker_budget_error(100000, kBatch, none) ==
        "--workers 100000: expected at most 1024 (one tokenizing thread each)");
}

TEST_CASE("worker budget: the address-space limit counts stacks and arenas") {
  WorkerMemoryContext ctx;
  ctx.address_space_limit = 1000 * kMiB;
  ctx.address_space_used = 60 * kMiB;
  ctx.malloc_arenas_max = 16;
  // 64 workers + the reader: 65 stacks of 8 MiB, 16 arenas of 64 MiB, 64 x 12 MiB of batches.
  const std::string e = worker_budget_error(64, kBatch, ctx);
  CHECK_THAT(e, Catch::StartsWith("--workers 64: the tokenizing threads need about 2312 MiB of address space"));
  CHECK_THAT(e, Catch::Contains("this process may use 1000 MiB (ulimit -v); use --workers 10 or fewer"));
  CHECK(worker_budget_error(10, kBatch, ctx).empty());
  ctx.address_space_limit = 100 * kMiB;
  CHECK_THAT(worker_budget_error(1, kBatch, ctx), Catch::EndsWith("not even 1 worker fits: raise the limit"));
}

TEST_CASE("worker budget: a cgroup limit counts batches and caches") {
  WorkerMemoryContext ctx;
  ctx.cgroup_available = 120 * kMiB;
  CHECK(worker_budget_error(10, kBatch, ctx).empty());
  CHECK(worker_budget_error(11, kBatch, ctx) ==
        "--workers 11: the tokenizing threads need about 132 MiB of memory (12 MiB each for batches and caches) and "
        "the process's cgroup has 120 MiB left under its memory limit; use --workers 10 or fewer");
}
