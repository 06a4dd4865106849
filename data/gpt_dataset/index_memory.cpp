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

}  // namespace

uint64_t gpt_index_bytes(const GPTEpochPlan& plan, SeqRange range) {
  const u128 docs = static_cast<u128>(plan.num_epochs) * static_cast<u128>(range.size());
  const u128 n = static_cast<u128>(plan.num_samples);
  return saturate(docs * 4 + (n + 1) * 16 + n * 8);
}

uint64_t blend_index_bytes(int64_t size) { return saturate(static_cast<u128>(size) * (2 + 8)); }

std::string describe_bytes(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) v /= 1024.0, ++u;
  return fmt::format("{:.2f} {} ({} bytes)", v, units[u], bytes);
}

void check_index_memory(const std::string& what, uint64_t bytes, const std::optional<AvailableMemory>& available,
                        const std::string& shrink_flags) {
  if (!available || bytes <= available->bytes) return;
  fail("{}: the sample index needs {}, more than the {} {}; ask for fewer samples ({}) or give the split more data",
       what, describe_bytes(bytes), describe_bytes(available->bytes), available->limit, shrink_flags);
}

std::string index_shrink_flags(int split) {
  if (split == 0) return "--train-samples / --train-iters";
  return split == 1 ? "--eval-iters, or a larger --eval-interval" : "--eval-iters";
}

}  // namespace gptrain
