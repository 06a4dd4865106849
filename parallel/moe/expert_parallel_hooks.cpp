#include "parallel/moe/expert_parallel_hooks.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain::parallel {

ExpertParallelHooks::ExpertParallelHooks(ParallelHooks& inner, TokenDispatcher& dispatcher, Backend& backend)
    : ForwardingHooks(inner), dispatcher_(dispatcher), be_(backend), expert_rows_(backend), perm_rows_(backend) {}

const void* ExpertParallelHooks::moe_to_experts(HookCall c, const void* perm, const int32_t* segment_rows, int E, int C,
                                                int32_t* expert_chunk_rows) {
  check(!plan_open_, "expert parallelism: layer {} sends tokens to the experts before the previous exchange came back",
        c.layer);
  check(E == dispatcher_.local_experts() * dispatcher_.ep_size(),
        "expert parallelism: layer {} routes over {} experts, the dispatcher splits {}", c.layer, E,
        dispatcher_.local_experts() * dispatcher_.ep_size());
  plan_ = dispatcher_.plan(segment_rows);
  plan_open_ = true;
  std::copy(plan_.local_chunk_rows.begin(), plan_.local_chunk_rows.end(), expert_chunk_rows);
  void* in =
      expert_rows_.get(std::max<std::size_t>(std::size_t(plan_.input_rows) * C * dtype_size(be_.compute_dtype()), 1));
  dispatcher_.dispatch(plan_, in, perm, C);
  return in;
}

const void* ExpertParallelHooks::moe_from_experts(HookCall c, const void* expert_out, const int32_t* segment_rows,
                                                  int E, int C) {
  check(plan_open_ && E == plan_.num_experts &&
            std::equal(segment_rows, segment_rows + E, plan_.segment_rows.begin() + std::ptrdiff_t(plan_.me) * E),
        "expert parallelism: layer {} brings expert outputs back without the matching exchange to the experts",
        c.layer);
  plan_open_ = false;
  void* perm = perm_rows_.get(std::max<std::size_t>(std::size_t(plan_.rows) * C * dtype_size(be_.compute_dtype()), 1));
  dispatcher_.combine(plan_, perm, expert_out, C);
  return perm;
}

}  // namespace gptrain::parallel
