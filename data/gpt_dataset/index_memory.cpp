#include "data/gpt_dataset/index_memory.h"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "core/common/error.h"

namespace gptrain {

namespace {

using u128 = unsigned __int128;

uint64_t saturate(u128 v) {
  return v > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
}

std::optional<uint64_t> read_number(const std::string& path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

uint64_t gpt_index_bytes(const GPTEpochPlan& plan, SeqRange range) {
  const u128 docs = static_cast<u128>(plan.num_epochs) * static_cast<u128>(range.size());
  const u128 n = static_cast<u128>(plan.num_samples);
  return saturate(docs * 4 + (n + 1) * 16 + n * 8);
}

uint64_t blend_index_bytes(int64_t size) { return saturate(static_cast<u128>(size) * (2 + 8)); }

std::optional<uint64_t> available_memory_bytes() {
  std::optional<uint64_t> avail;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream s(line);
    std::string key;
    uint64_t kib = 0;
    if (s >> key >> kib && key == "MemAvailable:") avail = kib * 1024;
  }
  // cgroup v2 (a SLURM job's or a container's limit): what is left below memory.max.
  const auto max = read_number("/sys/fs/cgroup/memory.max"), cur = read_number("/sys/fs/cgroup/memory.current");
  if (max && cur) {
    const uint64_t left = *max > *cur ? *max - *cur : 0;
    avail = avail ? std::min(*avail, left) : left;
  }
  return avail;
}

std::string describe_bytes(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) v /= 1024.0, ++u;
  return fmt::format("{:.2f} {} ({} bytes)", v, units[u], bytes);
}

void check_index_memory(const std::string& what, uint64_t bytes, std::optional<uint64_t> available) {
  if (!available || bytes <= *available) return;
  fail(
      "{}: the sample index needs {}, more than the {} of memory available; ask for fewer samples "
      "(--train-samples / --train-iters, --eval-iters) or give the split more data",
      what, describe_bytes(bytes), describe_bytes(*available));
}

}  // namespace gptrain
