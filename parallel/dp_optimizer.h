// Data parallelism and the AdamW step around DistributedGpt (Megatron's DDP + optimizer):
// - plain DP: gradients all-reduced over the DP group in buckets (flat ranges of each chunk's
//   gradient buffer), scaled by 1/DP; every replica keeps full optimizer state and updates all.
// - --use-distributed-optimizer (ZeRO-1): each chunk's flat buffer is cut into DP equal shards;
//   gradients are reduce-scattered, each rank keeps Adam moments (and fp32 master weights when the
//   compute dtype is not fp32) for its shard only, updates it, and the parameters are all-gathered.
// The global gradient norm counts every model element once (TP-replicated tensors on TP rank 0,
// the tied embedding copy never, DP shards once each) for --clip-grad.
#pragma once

#include "parallel/distributed_gpt.h"

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
  // bucket_elems: gradient elements per all-reduce (plain DP).
  DataParallelOptimizer(DistributedGpt& model, bool distributed, std::size_t bucket_elems = 40'000'000);
  ~DataParallelOptimizer();
  DataParallelOptimizer(const DataParallelOptimizer&) = delete;
  DataParallelOptimizer& operator=(const DataParallelOptimizer&) = delete;

  // After DistributedGpt::finish_model_parallel_grads.
  void reduce_gradients();
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
  // This rank's range [lo, hi) of chunk c's flat buffer that its optimizer state covers.
  std::pair<std::size_t, std::size_t> range(int c) const { return {st_[c].lo, st_[c].hi}; }
  // Full (TP x PP-local) moments of chunk c on the host, gathered over DP when sharded: collective
  // over the DP group. which: 0 = exp_avg, 1 = exp_avg_sq, 2 = fp32 master (non-fp32 compute only).
  std::vector<float> gather_moments(int c, int which);
  // Set this rank's part from full (TP x PP-local) host moments of chunk c.
  void scatter_moments(int c, int which, const std::vector<float>& full);

 private:
  struct ChunkState {
    std::size_t total = 0, shard = 0, lo = 0, hi = 0;  // shard: padded elements per DP rank
    float* m = nullptr;       // (hi - lo)
    float* v = nullptr;
    float* master = nullptr;  // (hi - lo) fp32, only when the compute dtype is not fp32
    float* grad_shard = nullptr;  // (shard) distributed: this rank's reduced gradients
    float* grad_pad = nullptr;    // (shard * dp) distributed: padded copy of the gradients
    void* param_pad = nullptr;    // (shard * dp) distributed: gathered parameters
  };
  const float* grads_of(int c);  // the reduced gradients of [lo, hi)

  DistributedGpt& model_;
  bool distributed_;
  std::size_t bucket_;
  std::vector<ChunkState> st_;
  int64_t steps_ = 0;
};

}  // namespace gptrain::parallel
