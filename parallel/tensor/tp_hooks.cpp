#include "parallel/tensor/tp_hooks.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"

#include <cmath>

namespace gptrain::parallel {

ElemType act_elem_type(DType t) {
  switch (t) {
    case DType::F32: return ElemType::F32;
    case DType::BF16: return ElemType::BF16;
    case DType::F16: return ElemType::F16;
  }
  return ElemType::F32;
}

TensorParallelHooks::TensorParallelHooks(Communicator& tp, Backend& backend, bool sequence_parallel, bool experts_split)
    : tp_(tp),
      be_(backend),
      sp_(sequence_parallel),
      experts_split_(experts_split),
      act_(act_elem_type(backend.compute_dtype())) {}

// Every TP rank routes the same tokens and receives the same expert rows (the EP exchange runs per TP rank),
// so the partial sums line up row for row: an all-reduce gives each rank the whole expert result.
void TensorParallelHooks::moe_expert_partial_sum(HookCall, void* rows, int n_rows, int C) {
  if (!experts_split_) return;
  ProfileRange range("etp-all-reduce");
  const std::size_t n = std::size_t(n_rows) * C;
  tp_.all_reduce(rows, n, act_, ReduceOp::Sum);
  expert_sum_elems_ += n;
}

void TensorParallelHooks::column_input_forward(HookCall, void* full, const void* local, int rows, int rows_local,
                                               int C) {
  if (!sp_) return;
  check(rows == rows_local * tp_.size(), "sequence parallel: {} rows are not {} ranks x {} local rows", rows,
        tp_.size(), rows_local);
  ProfileRange range("tp-all-gather");
  tp_.all_gather(full, local, std::size_t(rows_local) * C, act_);
}

// The sum over TP ranks of `full` into `local`: reduce-scattered along the sequence with SP, else all-reduced.
void TensorParallelHooks::sum_over_ranks(void* local, void* full, int rows, int rows_local, int C) {
  if (sp_) {
    ProfileRange range("tp-reduce-scatter");
    tp_.reduce_scatter(local, full, std::size_t(rows_local) * C, act_, ReduceOp::Sum);
    return;
  }
  ProfileRange range("tp-all-reduce");
  tp_.all_reduce(full, std::size_t(rows) * C, act_, ReduceOp::Sum);
  range.end();
  if (local != full) be_.copy(local, full, std::size_t(rows) * C * dtype_size(be_.compute_dtype()));
}

void TensorParallelHooks::column_input_backward(HookCall, void* local, void* full, int rows, int rows_local, int C) {
  sum_over_ranks(local, full, rows, rows_local, C);
}

void TensorParallelHooks::row_output_forward(HookCall, void* local, void* full, int rows, int rows_local, int C) {
  sum_over_ranks(local, full, rows, rows_local, C);
}

void TensorParallelHooks::row_output_backward(HookCall, void* full, const void* local, int rows, int rows_local,
                                              int C) {
  if (!sp_) {
    if (full != local) be_.copy(full, local, std::size_t(rows) * C * dtype_size(be_.compute_dtype()));
    return;
  }
  ProfileRange range("tp-all-gather");
  tp_.all_gather(full, local, std::size_t(rows_local) * C, act_);
}

void TensorParallelHooks::gather_saved_activation(void* full, const void* part, std::size_t count) {
  ProfileRange range("tp-gather-saved");
  tp_.all_gather(full, part, count, act_);
}

void TensorParallelHooks::reduce_fp8_amax(float* amax) { tp_.all_reduce(amax, 1, ElemType::F32, ReduceOp::Max); }

void TensorParallelHooks::combine_xent_stats(XentStats s, int N) {
  ProfileRange range("tp-loss-stats");
  const std::size_t n = std::size_t(N);
  max_.resize(n);
  sumexp_.resize(n);
  // Global row max; then each shard's sum of exp is rescaled from its own max to the global one.
  be_.copy_to_host(max_.data(), s.row_max, n * sizeof(float));
  std::vector<float> local_max = max_;
  tp_.all_reduce(s.row_max, n, ElemType::F32, ReduceOp::Max);
  be_.copy_to_host(max_.data(), s.row_max, n * sizeof(float));
  be_.copy_to_host(sumexp_.data(), s.row_sumexp, n * sizeof(float));
  for (std::size_t i = 0; i < n; ++i) {
    // A shard with no valid columns reports sumexp 0 (its max is then irrelevant).
    sumexp_[i] = sumexp_[i] == 0.0f ? 0.0f : sumexp_[i] * std::exp(local_max[i] - max_[i]);
  }
  be_.copy_to_device(s.row_sumexp, sumexp_.data(), n * sizeof(float));
  tp_.all_reduce(s.row_sumexp, n, ElemType::F32, ReduceOp::Sum);
  tp_.all_reduce(s.target_logit, n, ElemType::F32, ReduceOp::Sum);
}

}  // namespace gptrain::parallel
