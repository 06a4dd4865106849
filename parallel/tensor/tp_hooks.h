// Tensor (and sequence) parallelism: the ParallelHooks of core/model/parallel_hooks.h implemented with
// the TP group's communicator. The model calls them at Megatron's f/g points; this is the only place
// where TP talks to other ranks during forward/backward.
//
//   column f: fwd identity | SP all-gather        bwd all-reduce | SP reduce-scatter
//   row    g: fwd all-reduce | SP reduce-scatter  bwd identity   | SP all-gather
//   vocab-parallel cross-entropy: row max (max-reduce), rescaled sum-exp and target logit (sum-reduce)
//
// The communicator must take the backend's memory (MPI staged through host, or NCCL on the device).
#pragma once

#include "core/model/parallel_hooks.h"
#include "parallel/comm/communicator.h"

#include <vector>

namespace gptrain::parallel {

// The communicator element type of the backend's compute dtype.
ElemType act_elem_type(DType t);

class TensorParallelHooks final : public ParallelHooks {
 public:
  // experts_split: --expert-tensor-parallel-size equals TP, so the routed experts' partial results are summed
  // over this group (moe_expert_partial_sum); otherwise every TP rank holds them whole.
  TensorParallelHooks(Communicator& tp, Backend& backend, bool sequence_parallel, bool experts_split = false);

  void column_input_forward(HookCall, void* full, const void* local, int rows, int rows_local, int C) override;
  void column_input_backward(HookCall, void* local, void* full, int rows, int rows_local, int C) override;
  void row_output_forward(HookCall, void* local, void* full, int rows, int rows_local, int C) override;
  void row_output_backward(HookCall, void* full, const void* local, int rows, int rows_local, int C) override;
  void combine_xent_stats(XentStats stats, int N) override;
  void reduce_fp8_amax(float* amax) override;
  void gather_saved_activation(void* full, const void* part, std::size_t count) override;
  void moe_expert_partial_sum(HookCall, void* rows, int n_rows, int C) override;
  // Elements this rank sent in the experts' partial sums since construction (for reports and tests).
  std::size_t expert_sum_elems() const { return expert_sum_elems_; }

 private:
  void sum_over_ranks(void* local, void* full, int rows, int rows_local, int C);
  Communicator& tp_;
  Backend& be_;
  bool sp_;
  bool experts_split_;
  std::size_t expert_sum_elems_ = 0;
  ElemType act_;
  std::vector<float> max_, sumexp_;  // host scratch for the cross-entropy merge
};

}  // namespace gptrain::parallel
