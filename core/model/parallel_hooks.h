// The seams where tensor parallelism (and sequence parallelism) talks to other ranks. The model calls
// these at Megatron's "f" and "g" points and never knows how many ranks there are; the defaults are the
// single-process identities. Helper `parallel` subclasses this with MPI/NCCL collectives.
//
// Buffers are the backend's memory in its compute dtype (act), row-major (rows, C).
// Row counts: `rows` = N = B*T (all rows of the micro-batch), `rows_local` = the rows of the residual
// stream held by this rank: N without sequence parallel, N/tp with it (a contiguous block of the N
// rows starting at tp_rank * N/tp). Without sequence parallel the model passes the same pointer as
// `full` and `local`, so an all-reduce happens in place.
//
//   column-parallel linear (qkv, fc1, output layer):  y_local = f(x) W_local^T
//       f forward  = identity          | SP: all-gather  local (rows_local, C) -> full (rows, C)
//       f backward = all-reduce dx     | SP: reduce-scatter full dx (rows, C) -> local (rows_local, C)
//   row-parallel linear (proj, fc2) and the vocab-parallel embedding:  y = g(partial_local)
//       g forward  = all-reduce        | SP: reduce-scatter full (rows, C) -> local (rows_local, C)
//       g backward = identity          | SP: all-gather local dy (rows_local, C) -> full (rows, C)
//
// Row-parallel biases are added by TP rank 0 only before g (the sum is the same), and every rank
// accumulates their gradient (which is identical on all ranks, as for norm weights).
#pragma once

#include "core/common/error.h"
#include "kernels/backend.h"

namespace gptrain {

// Which call site a hook is for (lets an implementation keep per-site buffers or overlap comms).
enum class HookSite : uint8_t { Qkv, Proj, Fc1, Fc2, Embedding, OutputLayer, MoeExperts, Attention };

struct HookCall {
  HookSite site;
  int layer;  // global layer index; -1 for embedding and output layer
};

class ParallelHooks {
 public:
  virtual ~ParallelHooks() = default;

  // f forward: make `full` (rows, C) hold the input of a column-parallel linear given this rank's
  // `local` rows. Default: full == local, nothing to do.
  virtual void column_input_forward(HookCall, void* full, const void* local, int rows, int rows_local, int C) {
    (void)full, (void)local, (void)rows, (void)rows_local, (void)C;
  }
  // f backward: `full` (rows, C) holds this rank's partial input gradient; make `local`
  // (rows_local, C) the gradient of this rank's input rows (all-reduce / reduce-scatter).
  virtual void column_input_backward(HookCall, void* local, void* full, int rows, int rows_local, int C) {
    (void)full, (void)local, (void)rows, (void)rows_local, (void)C;
  }
  // g forward: `full` (rows, C) holds this rank's partial sum of a row-parallel linear (or embedding
  // lookup); make `local` (rows_local, C) the full sum for this rank's rows.
  virtual void row_output_forward(HookCall, void* local, void* full, int rows, int rows_local, int C) {
    (void)full, (void)local, (void)rows, (void)rows_local, (void)C;
  }
  // g backward: given the output gradient of this rank's rows in `local`, make `full` (rows, C) the
  // output gradient of all rows (identity / all-gather).
  virtual void row_output_backward(HookCall, void* full, const void* local, int rows, int rows_local, int C) {
    (void)full, (void)local, (void)rows, (void)rows_local, (void)C;
  }
  // --distribute-saved-activations: `full` (TP x count elements) from every TP rank's `part` (count
  // elements each, in rank order): an all-gather. Only tensor parallelism splits saved activations.
  virtual void gather_saved_activation(void* full, const void* part, std::size_t count) {
    (void)full, (void)part, (void)count;
    fail("--distribute-saved-activations needs tensor parallelism (--tensor-model-parallel-size > 1)");
  }
  // ---- expert parallelism: the token exchange of an MoE layer (moe_layer.cpp) ----
  // The layer routes its N tokens over all E experts, plans the permuted buffer (kernels/moe/moe.h: rows
  // grouped by expert, expert 0's first, token order inside a segment) and permutes its token rows into
  // `perm` (rows, C), rows = the sum of segment_rows (E, host). The experts this rank holds
  // (LocalSizes::expert_first, E_local; all E in one process) then run on `expert_rows`, grouped by local
  // expert, then by source rank: expert_chunk_rows (E_local, EP = E / E_local; host) counts the rows
  // local expert l got from EP rank s. Each chunk is its own GEMM, so a row's result is what its source
  // rank would compute holding all experts. The outputs go back the same way.
  //   to_experts:   send each expert's segment to the rank that holds the expert; return the rows the
  //                 local experts compute on (this rank's buffer, valid until the matching from_experts) and
  //                 fill expert_chunk_rows. Default: all experts are local; returns perm unchanged.
  //   from_experts: the inverse: expert_out (sum of expert_chunk_rows, C) rows go back to the ranks whose
  //                 tokens they are; return (rows, C) in perm's order. Default: returns expert_out.
  // Backward uses the same two calls: d(expert outputs) (rows, C) go to_experts, d(expert inputs) come back
  // from_experts. Buffers are act (compute dtype); segment_rows are identical on all ranks only for what
  // each rank sent, so an implementation exchanges the counts first.
  virtual const void* moe_to_experts(HookCall, const void* perm, const int32_t* segment_rows, int E, int C,
                                     int32_t* expert_chunk_rows) {
    for (int e = 0; e < E; ++e) expert_chunk_rows[e] = segment_rows[e];
    (void)C;
    return perm;
  }
  virtual const void* moe_from_experts(HookCall, const void* expert_out, const int32_t* segment_rows, int E, int C) {
    (void)segment_rows, (void)E, (void)C;
    return expert_out;
  }

  // ---- expert tensor parallelism: every TP rank holds a share of each local expert's ffn width (fc1 rows,
  // fc2 columns), so its fc2 outputs (forward) and fc1 input gradients (backward), `rows` x C, are partial
  // sums over the ETP group: sum them in place, every rank getting the same total. Default (experts whole
  // on every rank): nothing to sum. Called by every rank of the group with the same rows (possibly 0).
  virtual void moe_expert_partial_sum(HookCall, void* rows, int n_rows, int C) { (void)rows, (void)n_rows, (void)C; }
  // ---- context parallelism (StageConfig::cp_size > 1): attention over a sequence split across CP ranks ----
  // Backend::attention_forward / attention_backward's contract on this rank's local rows (B, T = its 2
  // chunks of each sequence, no segments or window): the implementation runs the K/V ring with the other
  // CP ranks (collective over the CP group). The single-process hooks have no CP group.
  virtual void context_attention_forward(HookCall, void* out, float* lse, const void* qkv, int B, int T, int NH,
                                         int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                                         HeadSlice heads) {
    (void)out, (void)lse, (void)qkv, (void)B, (void)T, (void)NH, (void)NKV, (void)HS, (void)dropout_p, (void)seed,
        (void)offset, (void)heads;
    fail("context-parallel attention needs the context-parallel hooks (--context-parallel-size > 1)");
  }
  virtual void context_attention_backward(HookCall, void* dqkv, const void* dout, const void* qkv, const void* out,
                                          const float* lse, int B, int T, int NH, int NKV, int HS, float dropout_p,
                                          uint64_t seed, uint64_t offset, HeadSlice heads) {
    (void)dqkv, (void)dout, (void)qkv, (void)out, (void)lse, (void)B, (void)T, (void)NH, (void)NKV, (void)HS,
        (void)dropout_p, (void)seed, (void)offset, (void)heads;
    fail("context-parallel attention needs the context-parallel hooks (--context-parallel-size > 1)");
  }

  // Merge the per-row softmax statistics of the vocab shards of all TP ranks (N rows): the combined
  // row_max is the max over ranks, row_sumexp is rescaled to it and summed, target_logit summed.
  virtual void combine_xent_stats(XentStats stats, int N) { (void)stats, (void)N; }

  // FP8 current scaling (--fp8-recipe tensorwise): `amax` (one fp32 in backend memory) becomes the max over the
  // TP ranks, so a tensor split over TP gets the scale of the whole tensor.
  virtual void reduce_fp8_amax(float* amax) { (void)amax; }
};

// A layer of hooks over another: every hook goes to `inner` unless the subclass overrides it (expert,
// context and expert-over-TP parallelism each add their own exchange on top of the TP hooks), so a hook
// added here reaches the inner hooks through every layer.
class ForwardingHooks : public ParallelHooks {
 public:
  explicit ForwardingHooks(ParallelHooks& inner) : inner_(inner) {}

  void column_input_forward(HookCall c, void* full, const void* local, int rows, int rows_local, int C) override {
    inner_.column_input_forward(c, full, local, rows, rows_local, C);
  }
  void column_input_backward(HookCall c, void* local, void* full, int rows, int rows_local, int C) override {
    inner_.column_input_backward(c, local, full, rows, rows_local, C);
  }
  void row_output_forward(HookCall c, void* local, void* full, int rows, int rows_local, int C) override {
    inner_.row_output_forward(c, local, full, rows, rows_local, C);
  }
  void row_output_backward(HookCall c, void* full, const void* local, int rows, int rows_local, int C) override {
    inner_.row_output_backward(c, full, local, rows, rows_local, C);
  }
  void gather_saved_activation(void* full, const void* part, std::size_t count) override {
    inner_.gather_saved_activation(full, part, count);
  }
  const void* moe_to_experts(HookCall c, const void* perm, const int32_t* segment_rows, int E, int C,
                             int32_t* expert_chunk_rows) override {
    return inner_.moe_to_experts(c, perm, segment_rows, E, C, expert_chunk_rows);
  }
  const void* moe_from_experts(HookCall c, const void* expert_out, const int32_t* segment_rows, int E, int C) override {
    return inner_.moe_from_experts(c, expert_out, segment_rows, E, C);
  }
  void moe_expert_partial_sum(HookCall c, void* rows, int n_rows, int C) override {
    inner_.moe_expert_partial_sum(c, rows, n_rows, C);
  }
  void context_attention_forward(HookCall c, void* out, float* lse, const void* qkv, int B, int T, int NH, int NKV,
                                 int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads) override {
    inner_.context_attention_forward(c, out, lse, qkv, B, T, NH, NKV, HS, dropout_p, seed, offset, heads);
  }
  void context_attention_backward(HookCall c, void* dqkv, const void* dout, const void* qkv, const void* out,
                                  const float* lse, int B, int T, int NH, int NKV, int HS, float dropout_p,
                                  uint64_t seed, uint64_t offset, HeadSlice heads) override {
    inner_.context_attention_backward(c, dqkv, dout, qkv, out, lse, B, T, NH, NKV, HS, dropout_p, seed, offset, heads);
  }
  void combine_xent_stats(XentStats stats, int N) override { inner_.combine_xent_stats(stats, N); }
  void reduce_fp8_amax(float* amax) override { inner_.reduce_fp8_amax(amax); }

 protected:
  ParallelHooks& inner_;
};

// The single-process hooks (all identities); what GptStage uses when given none.
inline ParallelHooks& no_parallel_hooks() {
  static ParallelHooks hooks;  // stateless
  return hooks;
}

}  // namespace gptrain
