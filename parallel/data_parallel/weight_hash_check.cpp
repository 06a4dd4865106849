#include "parallel/data_parallel/weight_hash_check.h"

#include "core/common/crc32c.h"
#include "core/common/error.h"
#include "parallel/comm/communicator.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace gptrain::parallel {

namespace {

struct HashedTensor {
  int chunk;
  std::string name;
};

// Differences between this rank's hashes and every other member's of `group`, as a message (empty: none).
std::string compare_over(Communicator& group, const std::vector<HashedTensor>& tensors,
                         const std::vector<int64_t>& mine, const char* what) {
  if (tensors.empty() || group.size() == 1) return {};
  const std::size_t n = mine.size();
  std::vector<int64_t> all(n * std::size_t(group.size()));
  group.all_gather(all.data(), mine.data(), n, ElemType::I64);
  for (int q = 0; q < group.size(); ++q) {
    if (q == group.rank()) continue;
    std::vector<std::string> differ;
    for (std::size_t i = 0; i < n; ++i)
      if (all[std::size_t(q) * n + i] != mine[i])
        differ.push_back(fmt::format("{} (model chunk {})", tensors[i].name, tensors[i].chunk));
    if (differ.empty()) continue;
    std::string list = differ.front();
    for (std::size_t k = 1; k < differ.size() && k < 3; ++k) list += ", " + differ[k];
    if (differ.size() > 3) list += fmt::format(" and {} more", differ.size() - 3);
    return fmt::format("its parameters ({} rank {}) differ from global rank {}'s ({} rank {}) in {}", what,
                       group.rank(), group.world_ranks()[std::size_t(q)], what, q, list);
  }
  return {};
}

}  // namespace

std::optional<std::string> weight_hash_mismatch(DistributedGpt& model) {
  Backend& be = model.backend();
  const std::size_t elem = dtype_size(be.compute_dtype());
  std::vector<HashedTensor> dense, expert;
  std::vector<int64_t> dense_hash, expert_hash;
  std::vector<unsigned char> host;
  for (int c = 0; c < model.num_chunks(); ++c) {
    GptStage& st = model.chunk(c);
    const std::vector<bool> is_expert = model.expert_tensors(c);
    const std::vector<ParamTensor>& tensors = st.layout().tensors;
    for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
      const ParamTensor& t = tensors[ti];
      host.resize(t.numel * elem);
      if (!host.empty())
        be.copy_to_host(host.data(), static_cast<const unsigned char*>(st.params()) + t.offset * elem, host.size());
      const int64_t h = int64_t(crc32c_extend(0, host.data(), host.size()));
      (is_expert[ti] ? expert : dense).push_back({c, t.name});
      (is_expert[ti] ? expert_hash : dense_hash).push_back(h);
    }
  }
  std::string mine = compare_over(model.comms().host_dp(), dense, dense_hash, "DP");
  const std::string ex = compare_over(model.comms().host_expert_dp(), expert, expert_hash, "expert-DP");
  if (mine.empty()) mine = ex;
  return agree_on_error(model.comms().host_world(),
                        mine.empty() ? std::nullopt : std::optional<std::string>(std::move(mine)));
}

void maybe_corrupt_weight_for_test(DistributedGpt& model, int64_t iteration) {
  const char* env = std::getenv("GPTRAIN_TEST_CORRUPT_WEIGHT");
  if (env == nullptr || *env == '\0') return;
  int rank = -1;
  long long at = -1;
  check(std::sscanf(env, "%d:%lld", &rank, &at) == 2, "GPTRAIN_TEST_CORRUPT_WEIGHT={}: expected RANK:ITERATION", env);
  if (rank != model.grid().rank() || at != iteration || model.num_chunks() == 0) return;
  Backend& be = model.backend();
  unsigned char b = 0;
  be.copy_to_host(&b, model.chunk(0).params(), 1);
  b ^= 1;  // the lowest mantissa bit of the first element
  be.copy_to_device(model.chunk(0).params(), &b, 1);
}

}  // namespace gptrain::parallel
