// How many tokenizing threads preprocess_data can afford, checked before any thread starts: --workers is
// bounded by a fixed maximum and by the memory the process may use (its address-space limit, ulimit -v,
// and its cgroup's memory limit) against what each worker needs. A refusal names --workers, the need, the
// limit and the largest count that fits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

// One tokenizing thread each; beyond this a run only waits on its own locks.
constexpr int kMaxPreprocessWorkers = 1024;

// What this process may use and uses now, and how glibc lays out a thread.
struct WorkerMemoryContext {
  std::optional<uint64_t> address_space_limit;  // RLIMIT_AS (ulimit -v); nullopt: unlimited
  uint64_t address_space_used = 0;              // the process's virtual size now
  std::optional<uint64_t> cgroup_available;     // the cgroup's memory limit less its usage now; nullopt: none
  uint64_t thread_stack = 8ull << 20;           // a new thread's stack (reserved address space)
  uint64_t malloc_arena = 64ull << 20;          // address space glibc reserves per arena (64-bit)
  int malloc_arenas_max = 8;                    // arenas glibc creates at most (8 per core on 64-bit)
};
WorkerMemoryContext current_worker_memory_context();

// Resident memory of one worker: up to two batches in flight (their text, tokens and line table) and its
// tokenizer's cache.
uint64_t worker_resident_bytes(uint64_t batch_bytes);

// The error message for `workers` threads of `batch_bytes` batches in `ctx`; empty when they fit.
std::string worker_budget_error(int workers, uint64_t batch_bytes, const WorkerMemoryContext& ctx);

}  // namespace gptrain
