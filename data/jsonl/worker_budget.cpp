#include "data/jsonl/worker_budget.h"

#include "core/common/host_memory.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <string>
#include <thread>

namespace gptrain {

namespace {

std::string mib(uint64_t bytes) {
  return bytes >= (10ull << 30) ? fmt::format("{:.1f} GiB", double(bytes) / double(1ull << 30))
                                : fmt::format("{} MiB", (bytes + (1ull << 20) - 1) >> 20);
}

uint64_t address_space_need(int workers, uint64_t batch_bytes, const WorkerMemoryContext& ctx) {
  // The reader thread too gets a stack and an arena.
  const uint64_t threads = uint64_t(workers) + 1;
  const uint64_t arenas = std::min<uint64_t>(threads, uint64_t(std::max(1, ctx.malloc_arenas_max)));
  return threads * ctx.thread_stack + arenas * ctx.malloc_arena +
         uint64_t(workers) * worker_resident_bytes(batch_bytes);
}

}  // namespace

uint64_t worker_resident_bytes(uint64_t batch_bytes) { return 4 * batch_bytes + (8ull << 20); }

WorkerMemoryContext current_worker_memory_context() {
  WorkerMemoryContext ctx;
  ctx.address_space_limit = address_space_limit();
  ctx.address_space_used = address_space_used();
  ctx.cgroup_available = cgroup_memory_left();
  pthread_attr_t attr;
  size_t stack = 0;
  if (pthread_getattr_default_np(&attr) == 0) {
    if (pthread_attr_getstacksize(&attr, &stack) == 0 && stack > 0) ctx.thread_stack = stack;
    pthread_attr_destroy(&attr);
  }
  ctx.malloc_arenas_max = 8 * int(std::max(1u, std::thread::hardware_concurrency()));
  return ctx;
}

std::string worker_budget_error(int workers, uint64_t batch_bytes, const WorkerMemoryContext& ctx) {
  if (workers > kMaxPreprocessWorkers)
    return fmt::format("--workers {}: expected at most {} (one tokenizing thread each)", workers,
                       kMaxPreprocessWorkers);
  auto fits = [&](int w) {
    if (ctx.address_space_limit &&
        ctx.address_space_used + address_space_need(w, batch_bytes, ctx) > *ctx.address_space_limit)
      return false;
    return !ctx.cgroup_available || uint64_t(w) * worker_resident_bytes(batch_bytes) <= *ctx.cgroup_available;
  };
  if (fits(workers)) return {};
  int most = 0;
  while (most < workers && fits(most + 1)) ++most;
  const std::string advice = most > 0 ? fmt::format("use --workers {} or fewer", most)
                                      : std::string("not even 1 worker fits: raise the limit");
  if (ctx.address_space_limit &&
      ctx.address_space_used + address_space_need(workers, batch_bytes, ctx) > *ctx.address_space_limit)
    return fmt::format(
        "--workers {}: the tokenizing threads need about {} of address space (each a {} stack, up to {} "
        "memory arenas of {}, {} of batches and caches) besides the {} in use, and this process may use {} "
        "(ulimit -v); {}",
        workers, mib(address_space_need(workers, batch_bytes, ctx)), mib(ctx.thread_stack), ctx.malloc_arenas_max,
        mib(ctx.malloc_arena), mib(worker_resident_bytes(batch_bytes)), mib(ctx.address_space_used),
        mib(*ctx.address_space_limit), advice);
  return fmt::format(
      "--workers {}: the tokenizing threads need about {} of memory ({} each for batches and caches) and the "
      "process's cgroup has {} left under its memory limit; {}",
      workers, mib(uint64_t(workers) * worker_resident_bytes(batch_bytes)), mib(worker_resident_bytes(batch_bytes)),
      mib(*ctx.cgroup_available), advice);
}

}  // namespace gptrain
