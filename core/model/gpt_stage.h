// GptStage: the GPT transformer (or one pipeline stage of it: global layers [first, last), with the
// embedding on the first stage and final norm + output layer + loss on the last), llm.c style:
// one arena per kind of state (parameters in the compute dtype, fp32 gradients; activations in
// StageActivations, one per micro-batch in flight) and structs of pointers into them; the layers are
// forward/backward function pairs over the Backend op interface (layers.h).
//
// Pipeline seam: forward reads tokens (first stage) or an input activation (N_seq, C) and leaves either
// the output activation (N_seq, C) or the per-row losses; backward reads the loss weights (last stage)
// or an output gradient (N_seq, C) and leaves the input gradient (N_seq, C) (non-first stages).
// Tensor-parallel seam: ParallelHooks at Megatron's f/g points. Data-parallel / optimizer /
// checkpoint seam: params()/grads() flat buffers indexed by layout().
#pragma once

#include "core/model/fp8_linear.h"
#include "core/model/model_config.h"
#include "core/model/param_layout.h"
#include "core/model/parallel_hooks.h"
#include "core/model/stage_tensors.h"
#include "kernels/backend.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gptrain {

// One micro-batch on the host, as the loader produces it. All arrays (N = B*T), row-major (B, T).
struct HostMicroBatch {
  std::vector<int32_t> tokens;        // (B, T) input ids
  std::vector<int32_t> labels;        // (B, T) next-token targets
  std::vector<float> loss_mask;       // (B, T) 1 = counts in the loss
  std::vector<int32_t> position_ids;  // (B, T)
  std::vector<int32_t> segment_ids;   // (B, T) or empty (no --reset-attention-mask)
  uint64_t dropout_seed = 0;          // keys every dropout mask of this micro-batch
};

struct StageActivations;  // defined in stage_activations.h
class ActivationOffload;  // defined in activation_offload.h

class GptStage {
 public:
  // cfg must be finalized. hooks (nullable: single process) must outlive the stage.
  GptStage(const StageConfig& cfg, Backend& backend, ParallelHooks* hooks = nullptr);
  ~GptStage();
  GptStage(const GptStage&) = delete;
  GptStage& operator=(const GptStage&) = delete;

  const StageConfig& config() const { return cfg_; }
  const LocalSizes& sizes() const { return sz_; }
  const ParamLayout& layout() const { return layout_; }
  Backend& backend() { return be_; }

  // Flat buffers (backend memory), layout().total elements each.
  void* params() { return params_; }     // compute dtype
  float* grads() { return grads_; }      // fp32, accumulated by backward (+=)
  void* param(const std::string& name);  // start of one tensor in params()
  float* grad(const std::string& name);

  // Megatron init, deterministic from cfg.seed and each tensor's global name and element index, so
  // any sharding of the same model gets the same values.
  void init_parameters();
  // Fills host fp32 `out` (t.numel) with the init values of this rank's piece of tensor t.
  void init_values(const ParamTensor& t, float* out) const;
  // Sets every parameter: fill(t, out) writes tensor t's t.numel values in host fp32, which are uploaded
  // in the compute dtype. Serves init_parameters and checkpoint loading.
  void set_parameters(const std::function<void(const ParamTensor&, float*)>& fill);
  void zero_grads();

  // --moe-router-enable-expert-bias: uploads the biases of this stage's layers from all_layers (the model's
  // num_layers rows of E floats, indexed by global layer).
  void set_expert_bias(const std::vector<float>& all_layers);
  // --fp8-format: the FP8 scaling state of the model's layers, (num_layers, kFp8TensorsPerLayer,
  // fp8_state_stride) floats (fp8_scaling.h) indexed by global layer: set uploads this stage's rows, get
  // downloads them into all_layers (the other rows untouched). No-ops without FP8.
  void set_fp8_state(const std::vector<float>& all_layers);
  void get_fp8_state(std::vector<float>& all_layers);

  // Activation buffers for one micro-batch in flight (1F1B keeps several). With recomputation
  // (cfg.recompute) they share the stage's replay workspace: backward refills it. With activation
  // offloading (cfg.cpu_offload_layers) the offloaded layers' share the staging slots, and the
  // activations get a host arena.
  std::unique_ptr<StageActivations> make_activations();

  // Uploads a micro-batch's tokens/labels/mask/positions into `acts`.
  void load_batch(StageActivations& acts, const HostMicroBatch& mb);
  // First stage: input == null (uses the tokens). Other stages: input (N_seq, C).
  // train = false disables dropout (evaluation).
  void forward(StageActivations& acts, const void* input, bool train);
  // Output activation (N_seq, C) of a non-last stage after forward.
  const void* output(StageActivations& acts);
  // Last stage after forward: sum over rows of loss * loss_mask (fp64 on the host) and sum of the mask.
  struct LossSum {
    double loss_sum = 0.0;
    double num_tokens = 0.0;
  };
  LossSum loss_sum(StageActivations& acts);
  // Last stage: dL/dlogit rows get loss_mask[row] * loss_weight (loss_weight = loss scale /
  // (tokens of this micro-batch * micro-batches per step), as Megatron). Other stages: dout (N_seq, C).
  // Accumulates parameter gradients into grads().
  void backward(StageActivations& acts, const void* dout, float loss_weight);
  // Gradient w.r.t. the stage input (N_seq, C), valid after backward on a non-first stage.
  const void* input_grad(StageActivations& acts);

  // Seam for data parallelism that overlaps backward: backward writes the parameter gradients in
  // parts, in this order: the head (last stage), each transformer layer from last to first, the
  // embedding (first stage). grad_groups()[k] lists the tensors (indices into layout().tensors) whose
  // gradients part k is the last to write (tied word embeddings on one stage: the embedding's part).
  // After each part backward calls the callback, if set, with k; on a GPU the part's kernels are then
  // issued, not finished (a listener orders its own work after them).
  const std::vector<std::vector<int>>& grad_groups() const { return grad_groups_; }
  void set_grads_done_callback(std::function<void(int group)> cb) { grads_done_ = std::move(cb); }
  // The forward twin, for a distributed optimizer that gathers parameters during forward: forward
  // runs the same parts in the opposite order and calls the callback, if set, with k before part k
  // reads its parameters; param_reads()[k] lists every tensor part k reads (with fused ops a layer
  // also reads the next norm of the stage).
  const std::vector<std::vector<int>>& param_reads() const { return param_reads_; }
  void set_params_needed_callback(std::function<void(int part)> cb) { params_needed_ = std::move(cb); }

 private:
  StageConfig cfg_;
  Backend& be_;
  ParallelHooks& hooks_;
  LocalSizes sz_;
  ParamLayout layout_;
  void* params_ = nullptr;
  float* grads_ = nullptr;
  StageTensors<const void*> w_;  // every tensor's place in params_ (stage_tensors.h)
  StageTensors<float*> g_;       // and in grads_
  std::vector<std::vector<int>> grad_groups_, param_reads_;
  std::function<void(int)> grads_done_, params_needed_;
  Fp8StageState fp8_;  // --fp8-format: scaling state and scratch (fp8_linear.h)
  const Fp8StageState* fp8_ptr() const { return fp8_.state ? &fp8_ : nullptr; }
  float* expert_bias_ = nullptr;            // (local layers, E) fp32: the router's expert bias, or null (LayerContext)
  void* replay_workspace_ = nullptr;        // recomputed activations of the layer(s) in backward (recompute.h)
  std::vector<int> recompute_group_first_;  // per local layer (recompute_group_first)
  std::unique_ptr<ActivationOffload> offload_;  // --cpu-offloading-num-layers: null when no layer here is offloaded

  // The forward of local layer li as forward ran it (the same fusion with the norms next to it). In a
  // replay, its first layer norms its input itself and its last layer computes no next norm.
  void run_layer_forward(StageActivations& a, int li, bool train, bool replay_first = false, bool replay_last = false);
  // Before layer li's backward: recompute what recomputation dropped.
  void recompute_for_backward(StageActivations& a, int li);

  void build_grad_groups(const TensorSpecs& specs);  // and param_reads_
  // The norm a fused layer li also computes on its output (next layer's ln1, or the final norm).
  const NormTensors<const void*>* next_norm(int li) const;
  void grads_done(int group) {
    if (grads_done_) grads_done_(group);
  }
  void params_needed(int part) {
    if (params_needed_) params_needed_(part);
  }
};

}  // namespace gptrain
