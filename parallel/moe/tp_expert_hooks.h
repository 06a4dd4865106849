// Expert parallelism across the TP ranks (--expert-tensor-parallel-size 1 with --expert-model-parallel-size =
// TP): Megatron's expert grid then makes each TP group an expert-model-parallel group, TP rank t holding the
// whole experts [t E/EP, (t+1) E/EP). gptrain's TP ranks route the same tokens into the same permuted buffer
// (expert-major), so no token moves to reach an expert: a rank's experts compute on their own contiguous
// segments of that buffer, and the outputs (forward) or input gradients (backward) of all experts are
// gathered over the group so that every TP rank again holds the whole (rows, C) buffer. Each expert runs
// one GEMM on its whole segment, as in one process. Every other hook is the TP hooks'.
#pragma once

#include "core/model/parallel_hooks.h"
#include "parallel/comm/communicator.h"
#include "parallel/moe/token_dispatcher.h"

#include <vector>

namespace gptrain::parallel {

class TpExpertHooks final : public ForwardingHooks {
 public:
  // inner: the TP hooks; ep: the expert-model-parallel communicator (the TP group's ranks, in TP order).
  TpExpertHooks(ParallelHooks& inner, Communicator& ep, Backend& backend);
  TpExpertHooks(const TpExpertHooks&) = delete;
  TpExpertHooks& operator=(const TpExpertHooks&) = delete;

  const void* moe_to_experts(HookCall c, const void* perm, const int32_t* segment_rows, int E, int C,
                             int32_t* expert_chunk_rows) override;
  const void* moe_from_experts(HookCall c, const void* expert_out, const int32_t* segment_rows, int E, int C) override;

  // Rows this rank sent in its gathers so far (its experts' rows to each of the EP - 1 others, padded).
  int64_t rows_sent() const { return rows_sent_; }
  // Bytes of its staging and returned buffers.
  std::size_t buffer_bytes() const { return send_.capacity() + recv_.capacity() + out_.capacity(); }

 private:
  Communicator& ep_;
  Backend& be_;
  std::vector<int32_t> segments_;  // the open exchange's segment rows (E), to check the matching from_experts
  bool open_ = false;
  int64_t rows_sent_ = 0;
  GrowBuffer send_, recv_, out_;
};

}  // namespace gptrain::parallel
