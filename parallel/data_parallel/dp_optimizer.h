// Data parallelism and the AdamW step around DistributedGpt (Megatron's DDP + optimizer), one AdamW
// (core/optim/adamw.h) per model chunk over the ranges this rank updates:
// - plain DP: gradients all-reduced over the DP group in buckets (grad_buckets.h: flat ranges of
//   each chunk's gradient buffer, --ddp-bucket-size), scaled by 1/DP; every replica keeps full
//   optimizer state and updates all.
// - --use-distributed-optimizer (ZeRO-1): every bucket is cut into DP equal shards; gradients are
//   reduce-scattered per bucket, each rank keeps Adam moments (and fp32 master weights when the
//   compute dtype is not fp32) for its shards only, updates them, and the parameters are
//   all-gathered per bucket.
// - --optimizer muon (model.options().optimizer): the 2-D weights are stepped by Muon (muon_optimizer.h), the
//   rest by AdamW with its state over those tensors only; every replica updates everything, or, with
//   --use-distributed-optimizer (Megatron's layer-wise distributed optimizer), the gradients are all-reduced,
//   each DP rank keeps the state of and steps whole tensors (layer_wise_owners) and broadcasts them.
// - --optimizer lion: the same 2-D weights are stepped by Lion, the rest by AdamW, in one AdamW per chunk
//   (element-wise both: sharded by the distributed optimizer like Adam's moments; adamw.h).
// - --optimizer-cpu-offload: --optimizer-offload-fraction of each AdamW's state (of this rank's shards with
//   the distributed optimizer) lives on the host and is stepped by the CPU AdamW (adamw.h).
// - --overlap-grad-reduce: the bucket reductions start during backward (grad_sync.h); the same
//   buckets and sums as without, so the same bits.
// - --overlap-param-gather (distributed optimizer): the parameter all-gathers of a step are waited
//   for in the next forward, part by part (param_gather.h); same bits.
// The global gradient norm counts every model element once (TP-replicated tensors on TP rank 0,
// the tied embedding copy never, DP shards once each) for --clip-grad.
#pragma once

#include "core/optim/adamw.h"
#include "parallel/data_parallel/muon_optimizer.h"
#include "parallel/data_parallel/grad_sync.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/data_parallel/param_gather.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gptrain::parallel {

class DataParallelOptimizer {
 public:
  // Sharding, bucket size and overlap come from model.options() (--use-distributed-optimizer,
  // --ddp-bucket-size, --overlap-grad-reduce, --overlap-param-gather).
  DataParallelOptimizer(DistributedGpt& model, AdamWHyper hyper, MuonHyper muon = {});
  ~DataParallelOptimizer();
  DataParallelOptimizer(const DataParallelOptimizer&) = delete;
  DataParallelOptimizer& operator=(const DataParallelOptimizer&) = delete;

  // After DistributedGpt::finish_model_parallel_grads: launches the bucket reductions not started
  // during backward and waits for all of them.
  void reduce_gradients();
  // The gradient buckets of chunk c, and what the last reduce_gradients saw (tests, logs).
  const std::vector<GradBucket>& buckets(int c) const { return sync_.buckets(c); }
  const GradSync::Stats& last_reduction() const { return sync_.last_step(); }
  // Completes parameter all-gathers still in flight (--overlap-param-gather): before anything but
  // the next forward reads or writes the parameters (checkpoints).
  void finish_param_gather();
  // Parameter buckets the last forward waited for (in flight when the step before it returned).
  int param_gathers_in_last_forward() const;
  // Global sum of squares of the (reduced) gradients, as stored (loss scale included), each model
  // element counted once.
  double grad_sum_squares();
  // The same over the parameters, fp32 (the masters where the compute dtype is not fp32; collective):
  // --log-params-norm.
  double params_sum_squares();
  // Zero elements of the reduced gradients, each model element once (collective): --log-num-zeros-in-grad.
  int64_t grad_zeros();
  // The update: AdamW on this rank's ranges with g = grad * grad_scale (unscale and clip folded in by
  // the caller), decoupled_lr for the --decoupled-lr group (param_groups.h) and lr for the rest, then the
  // parameter all-gather of the distributed optimizer. Advances steps().
  void apply(float lr, float decoupled_lr, float weight_decay, float grad_scale);
  int64_t steps() const { return adam_.front()->steps(); }
  void set_steps(int64_t s);

  // --use-distributed-optimizer: bucket shards, or layer-wise (--optimizer muon).
  bool distributed() const { return distributed_ || layer_wise_; }
  // The checkpoint names of tensor t's state arrays 0, 1, ... (optimizer_state_names of the update rule, or
  // Muon's "momentum_buffer" for its matrices), and the most any tensor has.
  std::vector<std::string> state_names(const ParamTensor& t) const;
  int state_arrays() const;
  const std::string& optimizer_name() const { return model_.options().optimizer; }
  // --optimizer lion: the elements Lion steps (the chunks' uses_muon tensors; AdamW steps the rest).
  std::size_t lion_elements() const;
  // "AdamW over 1234 parameters (1200 with weight decay); data parallel 2: 3 gradient buckets, reduced
  // during backward (--overlap-grad-reduce)" (the start-up log line).
  std::string describe() const;
  // Full (TP x PP-local) moments of chunk c on the host, gathered over DP when sharded: collective
  // over the DP group. which: 0 = exp_avg (SGD: momentum_buffer), 1 = exp_avg_sq (Adam only), 2 = fp32 master
  // (non-fp32 compute only).
  std::vector<float> gather_moments(int c, int which);
  // Set this rank's part from full (TP x PP-local) host moments of chunk c.
  void scatter_moments(int c, int which, const std::vector<float>& full);
  // After the parameters were loaded: the host-offloaded masters of an fp32 run follow them
  // (--optimizer-cpu-offload; AdamW::params_changed).
  void params_changed();
  // Whether the optimizer keeps fp32 master weights apart from the parameters (state array 2): a bf16/fp16
  // run, unless --bf16-stochastic-rounding makes the bf16 parameters their own masters.
  bool has_master() const;

 private:
  const float* grads_of(int c);
  // f(chunk, global offset, local offset, count, 0 dense / 1 routed expert) over the runs of this rank's
  // pieces that count in the norms (each model element once over the ranks that hold it).
  using CountedRun = std::function<void(int, std::size_t, std::size_t, std::size_t, int)>;
  void for_each_counted_run(const CountedRun& f);
  // Sums per-kind partial results over the ranks that hold distinct elements (collective).
  double sum_over_holders(double per_kind[2]);  // the reduced gradients, indexed by AdamW's local offsets

  // --optimizer muon --use-distributed-optimizer: whole tensors per DP rank (owners_), then broadcast to the
  // others.
  void broadcast_owned(int c);
  // A host array each of whose elements one DP rank holds (zero on the others), summed over DP: the whole.
  void sum_over_dp(std::vector<float>& full);

  DistributedGpt& model_;
  bool layer_wise_;   // Muon's layer-wise distributed optimizer (the gradients are all-reduced)
  bool distributed_;  // bucket-sharded distributed optimizer
  GradSync sync_;
  std::unique_ptr<ParamGather> gather_;               // distributed optimizer only
  std::vector<std::unique_ptr<AdamW>> adam_;          // per chunk: plain DP the whole chunk, distributed its shards
  std::vector<std::unique_ptr<MuonOptimizer>> muon_;  // per chunk with --optimizer muon: its matrices
  std::vector<std::vector<int>> owners_;              // layer-wise: per chunk, each tensor's DP rank
};

}  // namespace gptrain::parallel
