#include "parallel/data_parallel/grad_buckets.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain::parallel {

std::size_t default_bucket_elems(int dp) {
  return std::max<std::size_t>(40'000'000, std::size_t(1'000'000) * std::size_t(std::max(dp, 1)));
}

std::vector<GradBucket> plan_grad_buckets(const ParamLayout& layout, const std::vector<std::vector<int>>& groups,
                                          const std::vector<bool>& deferred_tensor, std::size_t bucket_elems, int dp,
                                          const std::vector<bool>& expert_tensor, int expert_dp) {
  if (expert_dp == 0) expert_dp = dp;
  check(bucket_elems >= 1, "--ddp-bucket-size must be >= 1");
  check(dp >= 1, "gradient buckets: data-parallel size {} < 1", dp);
  const std::size_t n = layout.tensors.size();
  check(deferred_tensor.empty() || deferred_tensor.size() == n, "gradient buckets: {} deferral flags for {} tensors",
        deferred_tensor.size(), n);
  check(expert_tensor.empty() || expert_tensor.size() == n, "gradient buckets: {} expert flags for {} tensors",
        expert_tensor.size(), n);
  check(expert_dp >= 1 && dp % expert_dp == 0, "gradient buckets: expert-data-parallel size {} does not divide DP {}",
        expert_dp, dp);
  auto is_expert = [&](int i) { return !expert_tensor.empty() && expert_tensor[i]; };
  std::vector<int> group_of(n, -1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int t : groups[g]) {
      check(t >= 0 && std::size_t(t) < n, "gradient buckets: group {} names tensor {} of {}", g, t, n);
      group_of[t] = int(g);
    }

  std::vector<GradBucket> buckets;
  for (int region = 0; region < 2; ++region) {
    // Tensors of the region from the highest offset down (the order backward finishes them).
    std::vector<int> order;
    for (std::size_t i = 0; i < n; ++i) {
      const ParamTensor& t = layout.tensors[i];
      if (t.numel == 0 || (t.offset < layout.num_decay) != (region == 0)) continue;
      check(groups.empty() || group_of[i] >= 0, "gradient buckets: no backward part finishes {}", t.name);
      order.push_back(int(i));
    }
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return layout.tensors[a].offset > layout.tensors[b].offset; });
    GradBucket cur;
    bool open = false;
    for (int i : order) {
      const ParamTensor& t = layout.tensors[i];
      if (open && is_expert(i) != cur.expert) {  // expert and dense tensors reduce over different groups
        buckets.push_back(cur);
        open = false;
      }
      if (!open) {
        cur = GradBucket{};
        cur.hi = t.offset + t.numel;
        cur.expert = is_expert(i);
        open = true;
      } else {
        check(t.offset + t.numel == cur.lo, "gradient buckets: tensor {} is not adjacent to its bucket (layout gap)",
              t.name);
      }
      cur.lo = t.offset;
      cur.ready_group = std::max(cur.ready_group, std::max(group_of[i], 0));
      cur.deferred = cur.deferred || (!deferred_tensor.empty() && deferred_tensor[i]);
      if (cur.size() >= bucket_elems) {
        buckets.push_back(cur);
        open = false;
      }
    }
    if (open) buckets.push_back(cur);
  }
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const GradBucket& a, const GradBucket& b) { return a.ready_group < b.ready_group; });
  std::size_t pad = 0, shard = 0;
  for (GradBucket& b : buckets) {
    const std::size_t d = std::size_t(b.expert ? expert_dp : dp);
    b.shard = (b.size() + d - 1) / d;
    b.pad_offset = pad;
    b.shard_offset = shard;
    pad += b.shard * d;
    shard += b.shard;
  }
  return buckets;
}

}  // namespace gptrain::parallel
