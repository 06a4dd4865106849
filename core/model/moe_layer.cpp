// The MoE MLP (Megatron's MoELayer with its local token dispatcher), replacing the dense MLP in the layers
// --moe-layer-freq picks:
//   router:  logits = ln2 W_r^T (E, C, no bias), taken in fp32; top-k choices, probabilities and the
//            scores of the load-balancing loss (kernels/moe/moe_math.h); probs *= the top-k scaling factor.
//            Sinkhorn routing instead: the choice from sinkhorn(logits) when training (a.train), from
//            the logits in evaluation, probs = the activation of the chosen logits
//   plan:    each choice's row in the permuted buffer (grouped by expert), capacity and token dropping
//   experts: permute -> [ParallelHooks::moe_to_experts] -> per expert fc2(act(fc1(rows))) as grouped GEMMs
//            -> [moe_from_experts] -> unpermute, the sum of each token's kept choices weighted by their probs
//   shared:  + fc2(act(fc1(ln2))) of the shared expert when --moe-shared-expert-intermediate-size is set,
//            times sigmoid(ln2 w_gate^T) per token with --moe-shared-expert-gate (w_gate (1, C)); backward
//            recomputes the ungated shared output (one GEMM) rather than keep an (N, C) activation per layer
// The exchange with other ranks (expert parallelism) is only in the two hooks; in one process they return
// the buffer they are given. The losses (load balancing, z-loss) are computed on the pre-capacity top-k
// with coefficient 1 for the log; backward adds their gradients with coefficient x moe_loss_weight (as
// Megatron's MoEAuxLossAutoScaler: the loss scale / micro-batches).
#include "core/model/layers.h"

#include <algorithm>
#include <numeric>

#include "kernels/moe/moe_math.h"

namespace gptrain {

namespace {

// The expert activation from rows (rows, F1) into (rows, F): SwiGLU, GeGLU, squared ReLU or GELU, as the dense
// MLP.
void expert_activation(const LayerContext& ctx, void* out, const void* inp, int rows, int F) {
  if (rows == 0) return;
  if (ctx.c.swiglu)
    ctx.be.swiglu_forward(out, inp, rows, F);
  else if (ctx.c.geglu)
    ctx.be.geglu_forward(out, inp, rows, F, ctx.c.gelu);
  else if (ctx.c.squared_relu)
    ctx.be.squared_relu_forward(out, inp, std::size_t(rows) * F);
  else
    ctx.be.gelu_forward(out, inp, std::size_t(rows) * F, ctx.c.gelu);
}

void expert_activation_backward(const LayerContext& ctx, void* dinp, const void* inp, const void* dout, int rows,
                                int F) {
  if (rows == 0) return;
  if (ctx.c.swiglu)
    ctx.be.swiglu_backward(dinp, inp, dout, rows, F);
  else if (ctx.c.geglu)
    ctx.be.geglu_backward(dinp, inp, dout, rows, F, ctx.c.gelu);
  else if (ctx.c.squared_relu)
    ctx.be.squared_relu_backward(dinp, inp, dout, std::size_t(rows) * F);
  else
    ctx.be.gelu_backward(dinp, inp, dout, std::size_t(rows) * F, ctx.c.gelu);
}

int total_rows(const std::vector<int32_t>& segments) { return std::accumulate(segments.begin(), segments.end(), 0); }

// The load-balancing loss's sequences: seq_aux_loss per sequence of the micro-batch, aux_loss over all tokens.
int balance_seqs(const LayerContext& ctx) { return ctx.c.moe.balance == MoeBalance::SeqAuxLoss ? ctx.s.B : 1; }

// --moe-input-jitter-eps: the noise is keyed like dropout by the micro-batch's seed (its own stream: the seed
// mixed with a constant) and the global layer (offset range layer << 40, elements numbered over the full
// (N, C) rows every TP rank holds), so every layout and a recomputation draw the same factors.
uint64_t jitter_seed(const StageActivations& a) { return a.dropout_seed ^ 0x6A09E667F3BCC909ull; }
uint64_t jitter_offset(const LayerContext& ctx, int li) { return uint64_t(ctx.c.layer_first + li) << 40; }

// Megatron applies the top-k scaling factor in its score-function routing only, not to Sinkhorn's probs.
bool scaled_probs(const MoeConfig& m) { return m.topk_scaling_factor > 0.0f && !m.sinkhorn(); }

}  // namespace

void moe_activation_forward(const LayerContext& ctx, StageActivations& a, int li) {
  LayerActivations& la = a.layers[li];
  expert_activation(ctx, la.moe_act, la.moe_fc1, total_rows(a.moe[li].expert_chunk_rows), ctx.s.FE);
  if (ctx.s.FS > 0) expert_activation(ctx, la.shared_act, la.shared_fc1, ctx.s.N, ctx.s.FS);
}

void moe_mlp_forward(const LayerContext& ctx, const MoeWeights& w, StageActivations& a, int li, void* out) {
  const MoeConfig& m = ctx.c.moe;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  MoeLayerHost& h = a.moe[li];
  const HookCall site{HookSite::MoeExperts, ctx.c.layer_first + li};
  const int N = s.N, C = s.C, E = s.E, K = s.K;
  const std::size_t es = dtype_size(be.compute_dtype());

  // ---- router: fp32 routing from the compute-dtype logits ----
  const void* router_in = la.ln2_full;
  if (m.input_jitter_eps > 0.0f) {  // Megatron jitters in training and evaluation alike
    be.moe_input_jitter(la.router_in, la.ln2_full, std::size_t(N) * C, m.input_jitter_eps, jitter_seed(a),
                        jitter_offset(ctx, li));
    router_in = la.router_in;
  }
  be.matmul_forward(a.logits_act, router_in, w.router_w, nullptr, N, C, E);  // (N, E)
  be.convert(la.router_logits, DType::F32, a.logits_act, be.compute_dtype(), std::size_t(N) * E);
  if (m.sinkhorn())  // router_scores only holds the Sinkhorn-normalised matrix (no balance loss reads it)
    be.moe_sinkhorn_router_forward(la.router_probs, la.router_experts, la.router_scores, la.router_logits, N, E, K,
                                   a.train);
  else {
    // The balance loss reads the plain top-k of the scores (the probs it also writes are not needed).
    if (la.router_loss_experts != la.router_experts)
      be.moe_router_forward(a.dprobs, la.router_loss_experts, la.router_scores, la.router_logits, N, E, K, m.score,
                            m.pre_softmax);
    const MoeChoice choice{ctx.expert_bias ? ctx.expert_bias + std::size_t(li) * E : nullptr, m.num_groups,
                           m.group_topk};
    be.moe_router_forward(la.router_probs, la.router_experts, la.router_scores, la.router_logits, N, E, K, m.score,
                          m.pre_softmax, choice);
  }
  if (scaled_probs(m)) be.scale_inplace(la.router_probs, m.topk_scaling_factor, std::size_t(N) * K);
  be.fill_zero(la.moe_losses, 2 * sizeof(float));
  if (m.balance_loss_on())
    be.moe_load_balancing_loss(la.moe_losses, la.router_scores, la.router_loss_experts, N, E, K, balance_seqs(ctx),
                               1.0f);
  if (m.z_loss_on()) be.moe_z_loss(la.moe_losses + 1, la.router_logits, N, E, 1.0f);

  // ---- plan: rows per expert on the host (the grouped GEMM's segment sizes) ----
  be.moe_dispatch_plan(la.dest_row, la.segment_rows, la.router_experts, la.router_probs, N, E, K, s.moe_capacity,
                       m.drop_policy, m.pad_to_capacity);
  h.segment_rows.resize(E);
  h.expert_chunk_rows.resize(E);  // (E_local, EP)
  be.copy_to_host(h.segment_rows.data(), la.segment_rows, std::size_t(E) * sizeof(int32_t));
  std::vector<int32_t> experts(std::size_t(N) * K);
  be.copy_to_host(experts.data(), la.router_experts, experts.size() * sizeof(int32_t));
  h.tokens_per_expert.assign(E, 0);
  for (int32_t e : experts) ++h.tokens_per_expert[e];
  // What the expert bias balances (Megatron's routing map after token dropping): an expert over capacity
  // keeps exactly `capacity` of its choices, whichever the drop policy keeps.
  h.routed_per_expert = h.tokens_per_expert;
  if (s.moe_capacity >= 0)
    for (int64_t& n : h.routed_per_expert) n = std::min<int64_t>(n, s.moe_capacity);
  float losses[2];
  be.copy_to_host(losses, la.moe_losses, sizeof(losses));
  h.balance_loss = losses[0];
  h.z_loss = losses[1];
  const int R = total_rows(h.segment_rows);

  // ---- experts ----
  be.moe_permute(la.moe_perm, la.ln2_full, la.dest_row, N, K, C, R);  // (R, C)
  const void* rows =
      ctx.hooks.moe_to_experts(site, la.moe_perm, h.segment_rows.data(), E, C, h.expert_chunk_rows.data());
  const int RL = total_rows(h.expert_chunk_rows);
  check(RL <= s.moe_expert_rows, "MoE layer {}: the experts of this rank got {} rows; the buffers hold {}", site.layer,
        RL, s.moe_expert_rows);
  if (rows != la.moe_in) be.copy(la.moe_in, rows, std::size_t(RL) * C * es);
  const int chunks = E / s.E_local;  // one GEMM per (local expert, source EP rank)
  be.moe_grouped_matmul_forward(la.moe_fc1, la.moe_in, w.fc1_w, h.expert_chunk_rows.data(), s.E_local, chunks, C,
                                s.FE1);
  expert_activation(ctx, la.moe_act, la.moe_fc1, RL, s.FE);
  be.moe_grouped_matmul_forward(la.moe_out, la.moe_act, w.fc2_w, h.expert_chunk_rows.data(), s.E_local, chunks, s.FE,
                                C);
  ctx.hooks.moe_expert_partial_sum(site, la.moe_out, RL, C);  // expert tensor parallelism: fc2 is row-split
  const void* back = ctx.hooks.moe_from_experts(site, la.moe_out, h.segment_rows.data(), E, C);
  if (back != la.moe_out_perm) be.copy(la.moe_out_perm, back, std::size_t(R) * C * es);
  be.moe_unpermute(out, la.moe_out_perm, la.router_probs, la.dest_row, N, K, C);  // (N, C)

  // ---- shared expert: out += fc2(act(fc1(ln2))) [x sigmoid(ln2 w_gate^T)] ----
  if (s.FS > 0) {
    be.matmul_forward(la.shared_fc1, la.ln2_full, w.shared_fc1_w, nullptr, N, C, s.FS1);
    expert_activation(ctx, la.shared_act, la.shared_fc1, N, s.FS);
    be.matmul_forward(a.moe_dx, la.shared_act, w.shared_fc2_w, nullptr, N, s.FS, C);
    if (m.shared_expert_gate) {
      be.matmul_forward(a.shared_gate, la.ln2_full, w.shared_gate_w, nullptr, N, C, 1);
      be.moe_shared_gate_forward(out, a.moe_dx, a.shared_gate, N, C);
    } else {
      be.add_inplace(out, a.moe_dx, std::size_t(N) * C);
    }
  }
}

void moe_mlp_backward(const LayerContext& ctx, const MoeWeights& w, const MoeGrads& g, StageActivations& a, int li,
                      const void* dy, void* dinp) {
  const MoeConfig& m = ctx.c.moe;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  MoeLayerHost& h = a.moe[li];
  const HookCall site{HookSite::MoeExperts, ctx.c.layer_first + li};
  const int N = s.N, C = s.C, E = s.E, K = s.K;
  const int R = total_rows(h.segment_rows), RL = total_rows(h.expert_chunk_rows);

  // ---- shared expert: writes dinp ----
  const bool shared = s.FS > 0;
  if (shared) {
    const void* dshared = dy;
    if (m.shared_expert_gate) {  // the ungated output again, then its gradient over it in place
      be.matmul_forward(a.moe_dx, la.shared_act, w.shared_fc2_w, nullptr, N, s.FS, C);
      be.matmul_forward(a.shared_gate, la.ln2_full, w.shared_gate_w, nullptr, N, C, 1);
      be.moe_shared_gate_backward(a.moe_dx, a.dshared_gate, dy, a.moe_dx, a.shared_gate, N, C);
      dshared = a.moe_dx;
    }
    be.matmul_backward(a.dshared_act, g.shared_fc2_w, nullptr, dshared, la.shared_act, w.shared_fc2_w, N, s.FS, C,
                       false);
    expert_activation_backward(ctx, a.dshared_fc1, la.shared_fc1, a.dshared_act, N, s.FS);
    be.matmul_backward(dinp, g.shared_fc1_w, nullptr, a.dshared_fc1, la.ln2_full, w.shared_fc1_w, N, C, s.FS1, false);
    if (m.shared_expert_gate)
      be.matmul_backward(dinp, g.shared_gate_w, nullptr, a.dshared_gate, la.ln2_full, w.shared_gate_w, N, C, 1, true);
  }

  // ---- experts, back through the exchange ----
  be.moe_unpermute_backward(a.dmoe_rows, a.dprobs, dy, la.moe_out_perm, la.router_probs, la.dest_row, N, K, C, R);
  // The same exchange as forward's (the same counts), now for the gradient rows.
  const void* dout =
      ctx.hooks.moe_to_experts(site, a.dmoe_rows, h.segment_rows.data(), E, C, h.expert_chunk_rows.data());
  const int chunks = E / s.E_local;
  be.moe_grouped_matmul_backward(a.dmoe_act, g.fc2_w, dout, la.moe_act, w.fc2_w, h.expert_chunk_rows.data(), s.E_local,
                                 chunks, s.FE, C);
  expert_activation_backward(ctx, a.dmoe_fc1, la.moe_fc1, a.dmoe_act, RL, s.FE);
  be.moe_grouped_matmul_backward(a.dmoe_rows2, g.fc1_w, a.dmoe_fc1, la.moe_in, w.fc1_w, h.expert_chunk_rows.data(),
                                 s.E_local, chunks, C, s.FE1);
  ctx.hooks.moe_expert_partial_sum(site, a.dmoe_rows2, RL, C);  // fc1 is column-split: input grads are partial
  const void* dperm = ctx.hooks.moe_from_experts(site, a.dmoe_rows2, h.segment_rows.data(), E, C);
  be.moe_permute_backward(shared ? a.moe_dx : dinp, dperm, la.dest_row, N, K, C);
  if (shared) be.add_inplace(dinp, a.moe_dx, std::size_t(N) * C);

  // ---- router: the probabilities' gradient plus the auxiliary losses' ----
  if (scaled_probs(m)) be.scale_inplace(a.dprobs, m.topk_scaling_factor, std::size_t(N) * K);
  const float* dscores = nullptr;
  if (m.balance_loss_on()) {
    be.moe_load_balancing_loss_backward(a.dscores, la.router_loss_experts, N, E, K, balance_seqs(ctx),
                                        m.aux_loss_coeff * a.moe_loss_weight);
    dscores = a.dscores;
  }
  if (m.sinkhorn())
    be.moe_router_backward(a.dlogits, a.dprobs, nullptr, la.router_logits, la.router_experts, N, E, K,
                           moe_sinkhorn_score(K), true);
  else
    be.moe_router_backward(a.dlogits, a.dprobs, dscores, la.router_logits, la.router_experts, N, E, K, m.score,
                           m.pre_softmax);
  if (m.z_loss_on()) be.moe_z_loss_backward(a.dlogits, la.router_logits, N, E, m.z_loss_coeff * a.moe_loss_weight);
  be.convert(a.logits_act, be.compute_dtype(), a.dlogits, DType::F32, std::size_t(N) * E);
  if (m.input_jitter_eps > 0.0f) {  // through the jitter: dinp += (dlogits W_r) x the same factors
    be.matmul_backward(a.moe_dx, g.router_w, nullptr, a.logits_act, la.router_in, w.router_w, N, C, E, false);
    be.moe_input_jitter_backward(dinp, a.moe_dx, std::size_t(N) * C, m.input_jitter_eps, jitter_seed(a),
                                 jitter_offset(ctx, li));
  } else {
    be.matmul_backward(dinp, g.router_w, nullptr, a.logits_act, la.ln2_full, w.router_w, N, C, E, true);
  }
}

}  // namespace gptrain
