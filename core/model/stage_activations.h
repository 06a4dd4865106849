// The activation arena of one micro-batch in flight through a GptStage: the batch inputs, what
// forward saves for backward (per layer), and the gradient scratch backward reuses layer by layer.
// One backend allocation; buffers are carved from it. Sizes from LocalSizes (N = B*T rows, N_seq =
// residual-stream rows on this rank). Without sequence parallel the "*_full" buffers alias the local ones.
// With activation recomputation (recompute.h) the activations backward recomputes are not in the arena:
// their pointers lead into the stage's replay workspace, one allocation shared by all micro-batches
// (forward writes there and nothing reads it back; backward refills it just before use). With activation
// offloading (activation_offload.h) what an offloaded layer keeps lives in the stage's staging slots and,
// between its forward and its backward, in this micro-batch's host arena.
#pragma once

#include "core/model/model_config.h"
#include "kernels/backend.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gptrain {

struct LayerActivations {
  void* ln1;        // (N_seq, C) input norm output
  float* ln1_mean;  // (N_seq) LayerNorm only
  float* ln1_rstd;  // (N_seq)
  void* ln1_full;   // (N, C) gathered ln1 (qkv input; also the MLP input with shared_norm)
  void* qkv;        // (N, QKV) after rope
  void* qk_in;      // (N, NH + NKV, HS) the Q/K heads before their norm (--qk-layernorm, --qk-l2-norm), else null
  float* qk_rstd;   // (N, NH + NKV) their norm statistics
  void* atty;       // (N, ATT) attention output
  float* lse;       // (B, NH, T)
  void* res_mid;    // (N_seq, C) x + attention branch (parallel_residual none only)
  void* ln2;        // (N_seq, C) pre-MLP norm output (not with shared_norm)
  float* ln2_mean;  // (N_seq)
  float* ln2_rstd;  // (N_seq)
  void* ln2_full;   // (N, C) fc1 input
  void* fc1;        // (N, F1) fc1 output, before the activation
  void* act;        // (N, F) activation output, fc2 input
  // MoE layers instead of fc1/act (moe_layer.cpp; R = moe_rows of LocalSizes, at most):
  void* router_in;          // (N, C) the router's jittered input (--moe-input-jitter-eps), or null
  float* router_logits;     // (N, E) fp32
  float* router_probs;      // (N, K) routing probabilities of the top-k choices
  int32_t* router_experts;  // (N, K) chosen experts
  float* router_scores;     // (N, E) scores the load-balancing loss reads
  int32_t* dest_row;        // (N, K) permuted-buffer row of each choice, -1 dropped
  int32_t* segment_rows;    // (E) rows of each expert's segment
  float* moe_losses;        // (2) load-balancing loss and z-loss, coefficient 1
  void* moe_perm;           // (R, C) token rows permuted by expert (== moe_in in one process)
  void* moe_in;             // (R, C) the rows this rank's experts compute on
  void* moe_fc1;            // (R, FE1)
  void* moe_act;            // (R, FE)
  void* moe_out;            // (R, C) this rank's expert outputs
  void* moe_out_perm;       // (R, C) the expert outputs in moe_perm's order (== moe_out in one process)
  void* shared_fc1;         // (N, FS1) shared expert, or null
  void* shared_act;         // (N, FS)
  // (N, K) the plain top-k of the scores, which the load-balancing loss reads (Megatron): its own buffer
  // when an expert bias or group limit changes the choice, otherwise router_experts itself
  int32_t* router_loss_experts;
};

// What an MoE layer's forward leaves on the host (the grouped GEMM's segment sizes, read by backward,
// and the statistics the log reports).
struct MoeLayerHost {
  std::vector<int32_t> segment_rows;       // (E) rows per expert of the permuted buffer
  std::vector<int32_t> expert_chunk_rows;  // (E_local, E / E_local) rows of this rank's experts per EP source
  std::vector<int64_t> tokens_per_expert;  // (E) top-k choices per expert before capacity
  std::vector<int64_t> routed_per_expert;  // (E) the choices each expert keeps after capacity
  float balance_loss = 0.0f;               // load-balancing loss with coefficient 1 (as Megatron logs it)
  float z_loss = 0.0f;                     // z-loss with coefficient 1
};

struct StageActivations {
  // replay_workspace: replay_workspace_bytes_for(...) bytes of backend memory (null when that is 0);
  // offload_staging: offload_staging_bytes_for(...) bytes (null when that is 0).
  StageActivations(Backend& be, const StageConfig& c, const LocalSizes& s, void* replay_workspace,
                   void* offload_staging = nullptr);
  ~StageActivations();
  // Bytes the arena of one micro-batch takes in the `compute` dtype, without allocating it (the memory
  // plan, also for --dry-run, which opens no device).
  static std::size_t arena_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s);
  // Bytes of the replay workspace a stage allocates once for all its micro-batches (0 without recomputation).
  static std::size_t replay_workspace_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s);
  // Activation offloading: the staging slots a stage allocates once, one unit's bytes, and the host arena
  // of one micro-batch (every unit); 0 without offloading.
  static std::size_t offload_staging_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s);
  static std::size_t offload_unit_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s);
  static std::size_t offload_host_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s);
  StageActivations(const StageActivations&) = delete;
  StageActivations& operator=(const StageActivations&) = delete;

  Backend* be;  // null in a measuring-only instance
  void* arena = nullptr;
  std::size_t arena_bytes = 0;

  // ---- batch (device) ----
  int32_t* tokens;       // (N)
  int32_t* targets;      // (N)
  int32_t* positions;    // (N)
  int32_t* segment_ids;  // (N), used only when has_segments
  bool has_segments = false;
  std::vector<float> host_mask;  // (N) loss mask on the host
  uint64_t dropout_seed = 0;
  bool train = false;  // forward ran with dropout on (backward regenerates the same masks)

  // ---- forward ----
  std::vector<void*> res;  // num_local_layers + 1 buffers (N_seq, C): residual stream at layer boundaries
  std::vector<LayerActivations> layers;
  std::vector<MoeLayerHost> moe;  // per local layer (used by MoE layers)
  // Backward weight of the MoE layers' auxiliary losses: Megatron's loss scale / micro-batches per step.
  float moe_loss_weight = 1.0f;
  // --distribute-saved-activations: per local layer, this TP rank's 1/TP of the kept input res[li] of a
  // full-recompute group starting there (saved_part_elems elements), else null. res[li] itself is then
  // workspace memory that forward writes and the replay gathers back.
  std::vector<void*> saved_input_part;
  std::size_t saved_part_elems = 0;
  void* emb_full;                  // (N, C) embedding partial sum (first stage)
  void* lnf;                       // (N_seq, C) final norm output (last stage)
  float* lnf_mean;                 // (N_seq)
  float* lnf_rstd;                 // (N_seq)
  void* lnf_full;                  // (N, C)
  void* logits;                    // (N, V) logits; overwritten by dlogits in backward
  XentStats xent;                  // 3 x (N)
  float* losses;                   // (N)
  float* dloss;                    // (N)
  std::vector<float> host_losses;  // (N)

  // ---- scratch shared by all layers ----
  void* tmp_full;    // (N, C)  row-parallel linear partial output
  void* tmp_local;   // (N_seq, C)
  void* tmp2_local;  // (N_seq, C)
  void* dres;        // (N_seq, C) gradient of the residual stream (input grad after backward)
  void* dtmp_local;  // (N_seq, C)
  void* dtmp_full;   // (N, C)
  void* dln_full;    // (N, C)
  void* dln2_full;   // (N, C) (two_norms)
  void* dln_local;   // (N_seq, C)
  void* dqkv;        // (N, QKV)
  void* datty;       // (N, ATT)
  void* dfc1;        // (N, F1)
  void* dact;        // (N, F)
  // MoE backward scratch (null without MoE layers)
  void* logits_act;    // (N, E) router logits / their gradient in the compute dtype
  float* dprobs;       // (N, K)
  float* dscores;      // (N, E)
  float* dlogits;      // (N, E)
  void* dmoe_rows;     // (R, C)
  void* dmoe_rows2;    // (RX, C): RX = moe_expert_rows, the expert side
  void* dmoe_fc1;      // (R, FE1)
  void* dmoe_act;      // (R, FE)
  void* moe_dx;        // (N, C) (also the shared expert output in forward)
  void* dshared_fc1;   // (N, FS1)
  void* dshared_act;   // (N, FS)
  void* shared_gate;   // (N) shared-expert gate logits, forward and backward (--moe-shared-expert-gate), or null
  void* dshared_gate;  // (N) their gradient

  // ---- activation offloading (activation_offload.h) ----
  int offload_units = 0;
  std::size_t offload_unit_bytes = 0;
  std::unique_ptr<void, std::function<void(void*)>> offload_host;  // offload_units x offload_unit_bytes
  std::vector<uint8_t> offload_loading;  // per unit: its copy back to the device was issued in this backward

 private:
  struct MeasureOnly {};
  StageActivations(std::size_t elem_bytes, const StageConfig& c, const LocalSizes& s, MeasureOnly);  // sizes only
  std::size_t workspace_bytes_ = 0, staging_bytes_ = 0;
};

}  // namespace gptrain
