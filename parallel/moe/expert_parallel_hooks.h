// Expert parallelism inside the model: the MoE token exchange of ParallelHooks (core/model/
// parallel_hooks.h) implemented by a TokenDispatcher over the EP group, every other hook forwarded to
// the tensor-parallel hooks (or the single-process identities when TP is 1).
//
// The layer calls moe_to_experts then moe_from_experts for one layer and one micro-batch, with no other
// MoE exchange in between (forward: inputs out, outputs back; backward: output gradients out, input
// gradients back), so the plan of a to_experts call (the counts of every EP rank) serves its
// from_experts. Both calls are collective over the EP group.
#pragma once

#include "core/model/parallel_hooks.h"
#include "parallel/moe/token_dispatcher.h"

namespace gptrain::parallel {

class ExpertParallelHooks final : public ForwardingHooks {
 public:
  // inner: the TP hooks, or no_parallel_hooks(); both must outlive this object.
  ExpertParallelHooks(ParallelHooks& inner, TokenDispatcher& dispatcher, Backend& backend);
  ExpertParallelHooks(const ExpertParallelHooks&) = delete;
  ExpertParallelHooks& operator=(const ExpertParallelHooks&) = delete;

  const void* moe_to_experts(HookCall c, const void* perm, const int32_t* segment_rows, int E, int C,
                             int32_t* expert_chunk_rows) override;
  const void* moe_from_experts(HookCall c, const void* expert_out, const int32_t* segment_rows, int E, int C) override;

  // Rows this rank sent to other EP ranks in its last dispatch (the all-to-all volume, for reports).
  int64_t last_rows_sent() const { return plan_.rows_sent_to_others(); }
  // Bytes of the buffers it returns (the dispatcher's own staging not included).
  std::size_t buffer_bytes() const { return expert_rows_.capacity() + perm_rows_.capacity(); }

 private:
  TokenDispatcher& dispatcher_;
  Backend& be_;
  DispatchPlan plan_;
  bool plan_open_ = false;              // a to_experts waits for its from_experts
  GrowBuffer expert_rows_, perm_rows_;  // what to_experts / from_experts return
};

}  // namespace gptrain::parallel
