// What this process may still allocate on the host, and which limit says so: the machine's MemAvailable,
// the resource limits (ulimit -v, -d) and the cgroup's memory limit. Read by the sample-index check, the CPU
// backend's memory plan and preprocess_data's worker budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

// What this process may still allocate, and the limit that says so.
struct AvailableMemory {
  uint64_t bytes = 0;
  std::string limit;  // e.g. "of memory available (MemAvailable)", "left under the address-space limit (ulimit -v)"
};

// The least of what the machine and the process's own limits leave: /proc/meminfo's MemAvailable; the
// address-space limit (RLIMIT_AS, ulimit -v) less the address space in use; the data-segment limit
// (RLIMIT_DATA, ulimit -d) less the data segment; the cgroup's limit less its usage (v2: memory.max -
// memory.current of the process's cgroup and each ancestor; v1: memory.limit_in_bytes -
// memory.usage_in_bytes). nullopt where none can be read.
std::optional<AvailableMemory> available_memory();
// What the address-space limit (RLIMIT_AS, ulimit -v) leaves this process; nullopt when there is none.
std::optional<uint64_t> address_space_left();
// The address-space limit itself (nullopt: unlimited), and the address space in use (VmSize).
std::optional<uint64_t> address_space_limit();
uint64_t address_space_used();
// What the tightest cgroup memory limit over this process leaves (nullopt: none).
std::optional<uint64_t> cgroup_memory_left();

}  // namespace gptrain
