// What the training loop needs from "the model": run a global batch's micro-batches forward and
// backward (or forward only), the global gradient norm, an optimizer step, and checkpoint I/O of
// model + optimizer tensors. The seam between core/train (the loop, which knows nothing of ranks) and
// parallel/: parallel/train/parallel_runner.h implements it for every layout, one process included.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/model/gpt_stage.h"

#include <optional>
#include <string>
#include <vector>

namespace gptrain {

// The MoE routers of one training step, per global layer (empty without MoE layers; dense layers 0). The
// losses are with coefficient 1 (as Megatron logs them), each the mean over the step's micro-batches of
// every DP replica; tokens_per_expert sums the top-k choices (before capacity) over all of them. Both are
// the same for any TP/PP/DP layout of the same global batch (micro-batches hold the same samples).
struct MoeStepStats {
  std::vector<double> balance_loss, z_loss;            // (num_layers)
  std::vector<std::vector<double>> tokens_per_expert;  // (num_layers, E)
  std::vector<std::vector<double>> routed_per_expert;  // (num_layers, E) the same after capacity
};

struct LossTotals {
  double loss_sum = 0.0;    // sum over unmasked tokens of the per-token loss (whole global batch)
  double num_tokens = 0.0;  // unmasked tokens
  MoeStepStats moe;         // training steps of MoE models
  double mean() const { return num_tokens > 0 ? loss_sum / num_tokens : 0.0; }
};

// What a training step's gradient is the gradient of (loss_scale aside):
// - per_micro_batch (Megatron's default): the mean over micro-batches (of every DP rank) of each
//   micro-batch's mean over its loss tokens;
// - per_token (--calculate-per-token-loss): the sum of the per-token losses over every loss token of the
//   global batch divided by their number. The two differ only when micro-batches hold different numbers
//   of loss tokens (--eod-mask-loss). The reported loss is the per-token mean either way (Megatron).
enum class LossNormalization { per_micro_batch, per_token };

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // Zeroes the gradients, then forward + backward over this rank's micro-batches of one global batch,
  // the loss normalized by `norm` and multiplied by loss_scale. Returns the global batch's loss totals
  // (summed over DP ranks).
  virtual LossTotals train_batch(std::vector<HostMicroBatch>& micro_batches, double loss_scale,
                                 LossNormalization norm) = 0;
  virtual LossTotals eval_batch(std::vector<HostMicroBatch>& micro_batches) = 0;
  // Sum of squares of the (loss-scaled) gradients over the whole model, each parameter counted once.
  virtual double grad_sum_squares() = 0;
  // Sum of squares of the fp32 parameters (the optimizer's masters where the compute dtype is not fp32),
  // each counted once as the gradients (collective): --log-params-norm.
  virtual double params_sum_squares() = 0;
  // Zero elements of the reduced gradients, each counted once (collective): --log-num-zeros-in-grad.
  virtual int64_t grad_zeros() = 0;
  // Collective: nullopt when every data-parallel replica holds bit-identical parameters, else (on every rank)
  // a message naming two ranks that differ and the tensors (--check-weight-hash-across-dp-replicas-interval).
  // `iteration` serves a test hook only.
  virtual std::optional<std::string> weight_hash_mismatch(int64_t iteration) = 0;
  // AdamW with g = grad * grad_scale; weight decay on the decayed group only; decoupled_lr for the input
  // embedding and output layer weights (--decoupled-lr; the caller passes lr without it), lr elsewhere.
  virtual void optimizer_step(float lr, float decoupled_lr, float weight_decay, float grad_scale) = 0;
  virtual int64_t optimizer_steps() const = 0;
  virtual void set_optimizer_steps(int64_t steps) = 0;
  // Writes this rank's model (+ optimizer) tensors of a checkpoint with the given metadata (collective; a
  // failure on any rank is an Error on every rank, and nothing is committed).
  virtual void save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                    bool save_optim) = 0;
  // --async-save (collective): takes host copies of what save() writes and starts writing them on a background
  // thread; training may go on. At most one save is pending: finish it first.
  virtual void start_async_save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                                bool save_optim) = 0;
  // Collective. When every rank has written its files of the pending save (or after waiting for them, with
  // wait), commits it and returns its step; nullopt while they are still being written or when no save is
  // pending. A failed write is an Error on every rank (nothing committed).
  virtual std::optional<checkpoint::Step> finish_async_save(bool wait) = 0;
  virtual bool async_save_pending() const = 0;
  // Reads model tensors (resharding as needed) and, with load_optim, the optimizer state.
  virtual void load(const checkpoint::Checkpoint& ck, bool load_optim) = 0;
  // --moe-use-upcycling: this MoE model's weights from a dense model's checkpoint (experts copied from the MLPs).
  virtual void upcycle(const checkpoint::Checkpoint& ck) = 0;
  // Collective over every rank: true on all of them when `flag` is true on any (exit decisions that every
  // rank must take at the same iteration).
  virtual bool any_rank(bool flag) = 0;
  // Collective over every rank: nullopt on all of them when no rank passes an error, else on all of them the
  // error of the lowest rank that has one (a checksum verdict every rank acts on alike).
  virtual std::optional<std::string> agree_on_error(const std::optional<std::string>& mine) = 0;
  // This rank's backend: what it allocated, and its device's free and total memory (none on CPU).
  virtual AllocatedBytes allocated_bytes() = 0;
  virtual std::optional<DeviceMemory> device_memory() = 0;
  // Waits for this rank's device work (Megatron's timers time finished work).
  virtual void synchronize() = 0;
  // Element-wise maximum over every rank, in place (a collective: every rank calls it).
  virtual void max_across_ranks(std::vector<double>& values) = 0;
};

}  // namespace gptrain
