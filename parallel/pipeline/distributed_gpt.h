// DistributedGpt: the GPT of core/model wrapped for TP x PP (x DP replicas), the model left unchanged.
// It builds this rank's model chunks (GptStage per pipeline chunk, each given the TP hooks), runs the
// pipeline schedule over a step's micro-batches with activations/gradients moved in one batched
// point-to-point call per schedule step (pipeline_p2p.h; MPI or NCCL alike), and
// finishes the model-parallel gradient syncs (sequence-parallel norm weights over TP, tied word
// embeddings between the first and last stage). Data parallelism and the optimizer are
// DataParallelOptimizer's (dp_optimizer.h); checkpoints are distributed_checkpoint.h's.
//
// Seam for the training loop (parallel/train/parallel_runner.h drives it):
//   DistributedGpt model(cfg, vocab_div, args.parallel, grid, comms, backend);
//   model.init_parameters();
//   per step: model.zero_grads(); loss = model.run_pipeline(my_micro_batches, true, loss_scale);
//             model.finish_model_parallel_grads(); optimizer.reduce_gradients(); optimizer.apply(...)
// A single process is the world-of-one case: one chunk, no hooks, no transfers.
#pragma once

#include "core/model/gpt_stage.h"
#include "core/train/model_runner.h"
#include "core/model/stage_activations.h"
#include "parallel/grid/grid.h"
#include "core/config/parallel_args.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/context/context_parallel_hooks.h"
#include "parallel/moe/expert_parallel_hooks.h"
#include "parallel/moe/tp_expert_hooks.h"
#include "parallel/moe/token_dispatcher.h"
#include "parallel/tensor/tp_hooks.h"

#include <memory>
#include <vector>

namespace gptrain::parallel {

// The finalized config of one model chunk (pipeline range r) on TP rank tp_rank of tp_size.
// ep_size / ep_rank: expert parallelism (which routed experts the chunk holds); etp_rank: this rank's share of
// each expert's ffn width when model.etp_size > 1 (expert tensor parallelism).
StageConfig chunk_model_config(const StageConfig& model, int make_vocab_size_divisible_by, int tp_size, int tp_rank,
                               bool sequence_parallel, const ChunkRange& r, int ep_size = 1, int ep_rank = 0,
                               int etp_rank = 0, int cp_size = 1, int cp_rank = 0);

// Told during a training step's backward when parameter gradients are final for the step: part
// `group` (GptStage::grad_groups) of model chunk `chunk` during that chunk's last micro-batch.
// Data parallelism starts reducing them then (grad_sync.h).
class GradsFinalListener {
 public:
  virtual ~GradsFinalListener() = default;
  virtual void grads_final(int chunk, int group) = 0;
};

// Told before a forward part of a model chunk reads its parameters (GptStage::param_reads), so a
// distributed optimizer can finish their all-gather just in time (--overlap-param-gather).
class ParamsNeededListener {
 public:
  virtual ~ParamsNeededListener() = default;
  virtual void params_needed(int chunk, int part) = 0;
};

class DistributedGpt {
 public:
  // `model`: the global architecture (not finalized); its parallel fields are set per chunk here.
  DistributedGpt(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                 const ProcessGrid& grid, GridComms& comms, Backend& backend);
  ~DistributedGpt();

  int num_chunks() const { return static_cast<int>(chunks_.size()); }
  GptStage& chunk(int c) { return *chunks_[c]; }
  const ProcessGrid& grid() const { return grid_; }
  GridComms& comms() { return comms_; }
  Backend& backend() { return be_; }
  const ParallelArgs& options() const { return opts_; }
  // Device bytes the expert-parallel token exchange holds now (its buffers only grow); 0 without EP.
  std::size_t expert_exchange_bytes() const;
  // The context-parallel hooks (CP > 1), else null: their buffers and timings.
  const ContextParallelHooks* context_hooks() const { return cp_hooks_.get(); }

  void init_parameters();
  void zero_grads();

  // One step over this DP rank's micro-batches (every stage of the replica gets the same list): with
  // train, forward and backward under the pipeline schedule, parameter gradients accumulating, each
  // micro-batch's summed token loss weighted loss_scale / (its loss tokens * micro-batches) as Megatron,
  // or with per_token loss_scale * DP / (loss tokens of the global batch) (the DP reduction then
  // averages, grad_sync.h: the reduced gradient is that of the global token sum / token count, which
  // Megatron gets by summing over DP and dividing by the count); without train, the forward passes
  // alone with dropout off (evaluation). Returns the global batch's loss totals (summed over DP), the
  // same on every rank.
  LossTotals run_pipeline(const std::vector<HostMicroBatch>& micro_batches, bool train, double loss_scale = 1.0,
                          LossNormalization norm = LossNormalization::per_micro_batch);

  // After a training run_pipeline: all-reduce over TP the gradients of the norm weights (sequence parallel:
  // each rank saw only its rows), and over {first, last} stage the tied word-embedding gradient.
  void finish_model_parallel_grads();

  // Per tensor of chunk c's layout: whether finish_model_parallel_grads changes its gradient (so DP
  // must reduce it only afterwards).
  std::vector<bool> model_parallel_synced(int chunk) const;
  // Per tensor of chunk c's layout: whether it holds routed-expert weights (expert parallelism splits
  // them over EP and reduces them over the expert-data-parallel group).
  std::vector<bool> expert_tensors(int chunk) const;
  // Null or a listener told when gradients become final during backward (--overlap-grad-reduce).
  void set_grads_final_listener(GradsFinalListener* l) { listener_ = l; }
  // Null or a listener told before every forward part (--overlap-param-gather).
  void set_params_needed_listener(ParamsNeededListener* l) { params_listener_ = l; }

  // Whether element range of tensor t counts in the global gradient norm on this rank (each element
  // of the model once: TP-replicated tensors on TP rank 0, the tied copy never).
  bool counts_in_norm(const ParamTensor& t) const;
  // Elements this rank sent in the expert-tensor-parallel partial sums so far (0 without ETP).
  std::size_t expert_partial_sum_elems() const { return tp_hooks_ ? tp_hooks_->expert_sum_elems() : 0; }

  // --moe-router-enable-expert-bias: every layer's expert bias, (num_layers, E) fp32 on the host (rows of
  // dense layers zero), the same on every rank; empty without it. update_expert_bias applies a training
  // step's statistics (reduced over PP and DP, so every rank moves every layer's bias alike) and uploads
  // each chunk's rows; set_expert_bias restores them from a checkpoint.
  const std::vector<float>& expert_bias() const { return expert_bias_; }
  void update_expert_bias(const MoeStepStats& s);
  void set_expert_bias(const std::vector<float>& all_layers);

  // --fp8-format with --fp8-recipe delayed: every layer's FP8 scaling state (fp8_scaling.h), the same on
  // every rank; empty otherwise. update_fp8_scales ends a training step: the step's amaxes reduced (max)
  // over all ranks, Transformer Engine's history roll and scale update, each chunk's rows uploaded;
  // set_fp8_state restores the state from a checkpoint.
  const std::vector<float>& fp8_state() const { return fp8_state_; }
  void update_fp8_scales();
  void set_fp8_state(const std::vector<float>& all_layers);

 private:
  // The MoE statistics of a forward (its MoE layers), and their reduction over PP and DP at the step's end.
  void add_moe_stats(MoeStepStats& out, const GptStage& st, const StageActivations& a) const;
  void reduce_moe_stats(MoeStepStats& s, int micro_batches);

  // One run_pipeline call's state and its steps (distributed_gpt.cpp).
  struct PipelineRun;

  ParallelArgs opts_;
  const ProcessGrid& grid_;
  GridComms& comms_;
  Backend& be_;
  bool experts_split_ = false;  // expert tensor parallelism: routed experts split over the TP group
  bool synced_by_model_parallel(int chunk, const ParamTensor& t) const;
  // --calculate-per-token-loss: the backward weight of every micro-batch (collective over DP).
  double per_token_weight(const std::vector<HostMicroBatch>& micro_batches, double loss_scale);

  std::unique_ptr<TensorParallelHooks> tp_hooks_;
  std::unique_ptr<TokenDispatcher> dispatcher_;     // expert parallelism (EP > 1 with MoE layers)
  std::unique_ptr<ExpertParallelHooks> ep_hooks_;   // the TP hooks plus the MoE token exchange
  std::unique_ptr<TpExpertHooks> tp_expert_hooks_;  // or: the experts over the TP ranks (ETP 1, EP = TP)
  std::unique_ptr<ContextParallelHooks> cp_hooks_;  // the above plus the K/V ring (CP > 1)
  ParallelHooks* hooks_ = nullptr;                  // what the stages call: one of the above, or null
  GradsFinalListener* listener_ = nullptr;
  ParamsNeededListener* params_listener_ = nullptr;
  std::vector<char> final_backward_;  // per chunk: its backward now running is the step's last
  std::vector<ChunkRange> ranges_;
  std::vector<std::unique_ptr<GptStage>> chunks_;
  std::vector<std::vector<std::unique_ptr<StageActivations>>> free_acts_;  // pool per chunk
  // (N_seq, C) each: the activation / gradient received for the current schedule step (PP > 1 only).
  void* recv_fwd_ = nullptr;
  void* recv_bwd_ = nullptr;
  std::size_t p2p_elems_ = 0;
  std::vector<float> expert_bias_;
  std::vector<float> fp8_state_;
};

}  // namespace gptrain::parallel
