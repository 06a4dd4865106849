// Data parallelism and the AdamW step around DistributedGpt (Megatron's DDP + optimizer):
// - plain DP: gradients all-reduced over the DP group in buckets (grad_buckets.h: flat ranges of
//   each chunk's gradient buffer, --ddp-bucket-size), scaled by 1/DP; every replica keeps full
//   optimizer state and updates all.
// - --use-distributed-optimizer (ZeRO-1): every bucket is cut into DP equal shards; gradients are
//   reduce-scattered per bucket, each rank keeps Adam moments (and fp32 master weights when the
//   compute dtype is not fp32) for its shards only, updates them, and the parameters are
//   all-gathered per bucket.
// - --overlap-grad-reduce: the bucket reductions start during backward (grad_sync.h); the same
//   buckets and sums as without, so the same bits.
// - --overlap-param-gather (distributed optimizer): the parameter all-gathers of a step are waited
//   for in the next forward, part by part (param_gather.h); same bits.
// The global gradient norm counts every model element once (TP-replicated tensors on TP rank 0,
// the tied embedding copy never, DP shards once each) for --clip-grad.
#pragma once

#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/data_parallel/grad_sync.h"
#include "parallel/data_parallel/param_gather.h"

#include <memory>
#include <string>
#include <vector>

namespace gptrain::parallel {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  float clip_grad = 1.0f;  // 0: no clipping
};

class DataParallelOptimizer {
 public:
  // Bucket size and overlap come from model.options() (--ddp-bucket-size, --overlap-grad-reduce).
  DataParallelOptimizer(DistributedGpt& model, bool distributed);
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
  // Global sum of squares / L2 norm of the (reduced) gradients, as stored (loss scale included).
  double grad_sum_squares();
  double grad_norm();
  // The update alone: AdamW on this rank's range with g = grad * grad_scale (unscale and clip folded
  // in by the caller), then the parameter all-gather of the distributed optimizer. Advances steps().
  void apply(float lr, float weight_decay, float grad_scale, const AdamWConfig& cfg = {});
  int64_t steps() const { return steps_; }
  void set_steps(int64_t s) { steps_ = s; }
  // One AdamW step (step >= 1: bias correction) on gradients carrying a loss scale of
  // 1/inv_loss_scale, clipped to cfg.clip_grad; returns the unscaled gradient norm. A non-finite
  // norm (fp16 overflow) leaves parameters and state untouched and is returned for the loss scaler.
  double step(const AdamWConfig& cfg, float lr, int step, float inv_loss_scale = 1.0f);

  bool distributed() const { return distributed_; }
  // Full (TP x PP-local) moments of chunk c on the host, gathered over DP when sharded: collective
  // over the DP group. which: 0 = exp_avg, 1 = exp_avg_sq, 2 = fp32 master (non-fp32 compute only).
  std::vector<float> gather_moments(int c, int which);
  // Set this rank's part from full (TP x PP-local) host moments of chunk c.
  void scatter_moments(int c, int which, const std::vector<float>& full);

 private:
  // A flat range [lo, hi) of the chunk whose optimizer state this rank holds, at `local` in its
  // state arrays. Plain DP: one piece, the whole chunk; distributed: this rank's shard of each bucket.
  struct Piece {
    std::size_t lo = 0, hi = 0, local = 0;
  };
  struct ChunkState {
    std::size_t total = 0;         // elements of the chunk
    std::size_t local_total = 0;   // elements of the state arrays (distributed: padded shards)
    std::vector<Piece> pieces;
    float* m = nullptr;            // (local_total)
    float* v = nullptr;
    float* master = nullptr;       // (local_total) fp32, only when the compute dtype is not fp32
  };
  const float* grads_of(int c);  // the reduced gradients, indexed by Piece::local

  DistributedGpt& model_;
  bool distributed_;
  GradSync sync_;
  std::unique_ptr<ParamGather> gather_;  // distributed optimizer only
  std::vector<ChunkState> st_;
  int64_t steps_ = 0;
};

}  // namespace gptrain::parallel
