// One transformer layer, forward and backward. Pre-norm; the three residual forms:
//   none:        h = x + drop(attn(ln1(x)));  out = h + drop(mlp(ln2(h)))
//   shared_norm: out = x + drop(attn(ln1(x))) + drop(mlp(ln1(x)))      (GPT-J)
//   two_norms:   out = x + drop(attn(ln1(x))) + drop(mlp(ln2(x)))      (GPT-NeoX)
// attn(y) = proj(attention(rope(qkv(y)))), mlp(y) = fc2(act(fc1(y))), act = GELU or SwiGLU; in the layers
// --moe-layer-freq picks, mlp is the MoE MLP (moe_layer.cpp). With --qk-layernorm the Q and K heads of qkv(y)
// are normalized per head (qk_norm op) before rope.
// With StageRun::fused_ops, every residual add whose sum a norm reads next runs as one fused op
// (x + attn -> ln2; the layer output -> the next layer's ln1 or the final norm, see NormFusion), and
// fc1 + GELU / fc2's backward through GELU are the fused linear+GELU ops. The backward needs no fused
// norm op: norm_backward already accumulates onto the residual-stream gradient dres.
#include "core/model/layers.h"
#include "core/model/norm.h"

namespace gptrain {

uint64_t dropout_offset(const LayerContext& ctx, int global_layer, DropoutSite site) {
  uint64_t off = (uint64_t(global_layer) * 4 + uint64_t(site)) << 40;
  // Attention dropout numbers the layer's heads itself (attention_heads); hidden dropout counts global rows.
  if (site != DropoutSite::AttentionProbs && ctx.c.sequence_parallel)
    off += uint64_t(ctx.c.tp_rank) * uint64_t(ctx.s.N_seq) * uint64_t(ctx.s.C);
  // Context parallelism: each CP rank's rows draw their own numbers (disjoint index ranges), not the
  // numbers one process draws for the same tokens; attention dropout indexes by global position instead.
  if (site != DropoutSite::AttentionProbs && ctx.c.cp_size > 1)
    off += uint64_t(ctx.c.cp_rank) * uint64_t(ctx.s.N) * uint64_t(ctx.s.C);
  return off;
}

HeadSlice attention_heads(const LayerContext& ctx) { return {ctx.c.tp_rank * ctx.s.NH, ctx.c.tp_size * ctx.s.NH}; }

namespace {

const void* rank0_only(const LayerContext& ctx, const void* bias) { return ctx.c.tp_rank == 0 ? bias : nullptr; }

// Hidden dropout of a branch output held in a.tmp_local (N_seq, C); returns the branch output.
const void* branch_dropout(const LayerContext& ctx, StageActivations& a, int gl, bool train, DropoutSite dsite) {
  const float p = ctx.c.hidden_dropout;
  if (!train || p == 0.0f) return a.tmp_local;
  ctx.be.dropout_forward(a.tmp2_local, a.tmp_local, std::size_t(ctx.s.N_seq) * ctx.s.C, p, a.dropout_seed,
                         dropout_offset(ctx, gl, dsite));
  return a.tmp2_local;
}

// A row-parallel linear (proj / fc2) from `inp` (N, IC), reduced over TP, then hidden dropout.
// Returns the (N_seq, C) branch output (a scratch buffer of `a`).
const void* row_parallel_branch(const LayerContext& ctx, StageActivations& a, HookSite site, int gl, const void* inp,
                                const void* w, const void* b, int IC, bool train, DropoutSite dsite) {
  const LocalSizes& s = ctx.s;
  const Fp8Gemm gemm = site == HookSite::Proj ? Fp8Gemm::Proj : Fp8Gemm::Fc2;
  linear_forward(ctx, gl - ctx.c.layer_first, gemm, train, a.tmp_full, inp, w, rank0_only(ctx, b), s.N, IC,
                 s.C);  // (N, C) partial
  ctx.hooks.row_output_forward({site, gl}, a.tmp_local, a.tmp_full, s.N, s.N_seq, s.C);
  return branch_dropout(ctx, a, gl, train, dsite);
}

// Backward of row_parallel_branch's dropout and reduction: returns dL/d(linear output) (N, C),
// reading dres (N_seq, C) = dL/d(branch output).
void* row_parallel_branch_grad(const LayerContext& ctx, StageActivations& a, HookSite site, int gl, DropoutSite dsite) {
  const LocalSizes& s = ctx.s;
  void* dy_local = a.dres;
  const float p = ctx.c.hidden_dropout;
  if (a.train && p > 0.0f) {
    ctx.be.dropout_backward(a.dtmp_local, a.dres, std::size_t(s.N_seq) * s.C, p, a.dropout_seed,
                            dropout_offset(ctx, gl, dsite));
    dy_local = a.dtmp_local;
  }
  void* dy_full = ctx.c.sequence_parallel ? a.dtmp_full : dy_local;
  ctx.hooks.row_output_backward({site, gl}, dy_full, dy_local, s.N, s.N_seq, s.C);
  return dy_full;
}

// The fused linear + GELU ops, except in FP8 layers, whose fc1 and fc2 quantise their operands first.
bool fused_gelu(const LayerContext& ctx, int li) {
  return ctx.c.fused_gelu_mlp() && !(ctx.fp8 && ctx.c.fp8.layer_in_fp8(ctx.c.layer_first + li, ctx.c.num_layers));
}

}  // namespace

void attention_core_forward(const LayerContext& ctx, StageActivations& a, int li, bool train) {
  const LocalSizes& s = ctx.s;
  LayerActivations& la = a.layers[li];
  if (ctx.c.cp_size > 1) {
    check(!a.has_segments, "--reset-attention-mask with --context-parallel-size > 1 is not supported yet");
    ctx.hooks.context_attention_forward({HookSite::Attention, ctx.c.layer_first + li}, la.atty, la.lse, la.qkv, s.B,
                                        s.T, s.NH, s.NKV, s.HS, train ? ctx.c.attention_dropout : 0.0f, a.dropout_seed,
                                        dropout_offset(ctx, ctx.c.layer_first + li, DropoutSite::AttentionProbs),
                                        attention_heads(ctx));
    return;
  }
  ctx.be.attention_forward(la.atty, la.lse, la.qkv, a.has_segments ? a.segment_ids : nullptr, s.B, s.T, s.NH, s.NKV,
                           s.HS, train ? ctx.c.attention_dropout : 0.0f, a.dropout_seed,
                           dropout_offset(ctx, ctx.c.layer_first + li, DropoutSite::AttentionProbs),
                           attention_heads(ctx), ctx.c.attention_window(ctx.c.layer_first + li));
}

void mlp_activation_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li) {
  const StageConfig& c = ctx.c;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  if (fused_gelu(ctx, li)) {
    be.matmul_bias_gelu_forward(la.act, la.fc1, la.ln2_full, w.fc1_w, w.fc1_b, s.N, s.C, s.F1, c.gelu);  // (N, F)
  } else {
    linear_forward(ctx, li, Fp8Gemm::Fc1, a.train, la.fc1, la.ln2_full, w.fc1_w, w.fc1_b, s.N, s.C, s.F1);  // (N, F1)
    if (c.swiglu)
      be.swiglu_forward(la.act, la.fc1, s.N, s.F);
    else if (c.geglu)
      be.geglu_forward(la.act, la.fc1, s.N, s.F, c.gelu);
    else if (c.squared_relu)
      be.squared_relu_forward(la.act, la.fc1, std::size_t(s.N) * s.F);  // (N, F)
    else
      be.gelu_forward(la.act, la.fc1, std::size_t(s.N) * s.F, c.gelu);  // (N, F)
  }
}

void dense_mlp_backward(const LayerContext& ctx, const LayerWeights& w, const LayerGrads& g, StageActivations& a,
                        int li, const void* dy, void* dmlp_in) {
  const StageConfig& c = ctx.c;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  if (fused_gelu(ctx, li)) {
    be.matmul_dgelu_backward(a.dfc1, g.fc2_w, g.fc2_b, dy, la.act, la.fc1, w.fc2_w, s.N, s.F, s.C, c.gelu);  // (N, F)
  } else {
    linear_backward(ctx, li, Fp8Gemm::Fc2, a.train, a.dact, g.fc2_w, g.fc2_b, dy, la.act, w.fc2_w, s.N, s.F, s.C,
                    false);  // dact (N, F)
    if (c.swiglu)
      be.swiglu_backward(a.dfc1, la.fc1, a.dact, s.N, s.F);
    else if (c.geglu)
      be.geglu_backward(a.dfc1, la.fc1, a.dact, s.N, s.F, c.gelu);
    else if (c.squared_relu)
      be.squared_relu_backward(a.dfc1, la.fc1, a.dact, std::size_t(s.N) * s.F);  // dfc1 (N, F)
    else
      be.gelu_backward(a.dfc1, la.fc1, a.dact, std::size_t(s.N) * s.F, c.gelu);  // dfc1 (N, F1)
  }
  linear_backward(ctx, li, Fp8Gemm::Fc1, a.train, dmlp_in, g.fc1_w, g.fc1_b, a.dfc1, la.ln2_full, w.fc1_w, s.N, s.C,
                  s.F1, false);
}

void layer_norms_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li) {
  LayerActivations& la = a.layers[li];
  const void* x = a.res[li];
  norm_forward(ctx, la.ln1, la.ln1_mean, la.ln1_rstd, x, w.ln1);
  if (ctx.c.parallel_residual != ParallelResidual::SharedNorm)
    norm_forward(ctx, la.ln2, la.ln2_mean, la.ln2_rstd,
                 ctx.c.parallel_residual == ParallelResidual::None ? la.res_mid : x, w.ln2);
}

void layer_norm_gathers_forward(const LayerContext& ctx, StageActivations& a, int li) {
  const LocalSizes& s = ctx.s;
  LayerActivations& la = a.layers[li];
  const int gl = ctx.c.layer_first + li;
  ctx.hooks.column_input_forward({HookSite::Qkv, gl}, la.ln1_full, la.ln1, s.N, s.N_seq, s.C);
  if (ctx.c.parallel_residual != ParallelResidual::SharedNorm)
    ctx.hooks.column_input_forward({HookSite::Fc1, gl}, la.ln2_full, la.ln2, s.N, s.N_seq, s.C);
}

void layer_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li, bool train,
                   const NormFusion& fusion) {
  const StageConfig& c = ctx.c;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  const int gl = c.layer_first + li;
  const void* x = a.res[li];  // (N_seq, C)
  void* out = a.res[li + 1];  // (N_seq, C)
  const std::size_t nC = std::size_t(s.N_seq) * s.C;

  // ---- attention branch ----
  if (!fusion.input_normed) norm_forward(ctx, la.ln1, la.ln1_mean, la.ln1_rstd, x, w.ln1);
  ctx.hooks.column_input_forward({HookSite::Qkv, gl}, la.ln1_full, la.ln1, s.N, s.N_seq, s.C);
  linear_forward(ctx, li, Fp8Gemm::Qkv, train, la.qkv, la.ln1_full, w.qkv_w, w.qkv_b, s.N, s.C, s.QKV);  // (N, QKV)
  if (c.qk_layernorm)
    be.qk_norm_forward(la.qkv, la.qk_in, la.qk_rstd, w.q_ln_w, w.k_ln_w, s.N, s.NH, s.NKV, s.HS, c.norm_epsilon,
                       c.apply_layernorm_1p);
  if (c.qk_l2_norm)  // no weights
    be.qk_norm_forward(la.qkv, la.qk_in, la.qk_rstd, nullptr, nullptr, s.N, s.NH, s.NKV, s.HS, c.norm_epsilon);
  if (c.position_embedding == PositionEmbedding::Rope)
    be.rope(la.qkv, a.positions, s.N, s.NH, s.NKV, s.HS, s.rotary_dim, c.rotary_base, c.rotary_interleaved, false,
            c.rope_scaling);
  attention_core_forward(ctx, a, li, train);  // (N, ATT)
  const void* attn_out = row_parallel_branch(ctx, a, HookSite::Proj, gl, la.atty, w.proj_w, w.proj_b, s.ATT, train,
                                             DropoutSite::AttentionOut);  // (N_seq, C)

  // ---- MLP branch input: ln2_full (N, C) (== ln1_full with shared_norm) ----
  if (c.parallel_residual == ParallelResidual::None) {
    residual_norm_forward(ctx, la.res_mid, la.ln2, la.ln2_mean, la.ln2_rstd, x, attn_out, w.ln2);
    ctx.hooks.column_input_forward({HookSite::Fc1, gl}, la.ln2_full, la.ln2, s.N, s.N_seq, s.C);
  } else {
    be.add(out, x, attn_out, nC);  // before the MLP reuses the scratch buffers
    if (c.parallel_residual == ParallelResidual::TwoNorms) {
      norm_forward(ctx, la.ln2, la.ln2_mean, la.ln2_rstd, x, w.ln2);
      ctx.hooks.column_input_forward({HookSite::Fc1, gl}, la.ln2_full, la.ln2, s.N, s.N_seq, s.C);
    }
  }

  // ---- MLP (dense, or the MoE MLP in the layers --moe-layer-freq picks) ----
  const void* mlp_out;
  if (c.moe.is_moe_layer(gl)) {
    // Every TP rank runs the MoE MLP on all N rows (its weights are not split over TP): (N, C), the same on
    // every rank. With sequence parallelism the branch keeps this rank's block of rows, what the dense
    // MLP's reduce-scatter leaves it; backward gathers the output gradient as for the dense MLP.
    moe_mlp_forward(ctx, w.moe, a, li, a.tmp_full);
    if (c.sequence_parallel) {
      const std::size_t block = std::size_t(s.N_seq) * s.C * dtype_size(be.compute_dtype());
      be.copy(a.tmp_local, static_cast<const char*>(a.tmp_full) + std::size_t(c.tp_rank) * block, block);
    }
    mlp_out = branch_dropout(ctx, a, gl, train, DropoutSite::MlpOut);
  } else {
    mlp_activation_forward(ctx, w, a, li);
    mlp_out = row_parallel_branch(ctx, a, HookSite::Fc2, gl, la.act, w.fc2_w, w.fc2_b, s.F, train, DropoutSite::MlpOut);
  }

  // ---- residual: out = (res_mid | out) + mlp_out, fused with the next norm of the stage ----
  const void* res_before = c.parallel_residual == ParallelResidual::None ? la.res_mid : out;
  if (fusion.next_norm) {
    const bool last = li + 1 == c.num_local_layers();
    void* next_out = last ? a.lnf : a.layers[li + 1].ln1;
    float* next_mean = last ? a.lnf_mean : a.layers[li + 1].ln1_mean;
    float* next_rstd = last ? a.lnf_rstd : a.layers[li + 1].ln1_rstd;
    residual_norm_forward(ctx, out, next_out, next_mean, next_rstd, res_before, mlp_out, *fusion.next_norm);
  } else if (c.parallel_residual == ParallelResidual::None) {
    be.add(out, la.res_mid, mlp_out, nC);
  } else {
    be.add_inplace(out, mlp_out, nC);
  }
}

void layer_backward(const LayerContext& ctx, const LayerWeights& w, const LayerGrads& g, StageActivations& a, int li) {
  const StageConfig& c = ctx.c;
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  LayerActivations& la = a.layers[li];
  const int gl = c.layer_first + li;
  const void* x = a.res[li];
  const bool shared = c.parallel_residual == ParallelResidual::SharedNorm;
  const bool two = c.parallel_residual == ParallelResidual::TwoNorms;

  // ---- MLP branch: dres = dL/d(out) ----
  void* dy = row_parallel_branch_grad(ctx, a, HookSite::Fc2, gl, DropoutSite::MlpOut);  // (N, C)
  void* dmlp_in = two ? a.dln2_full : a.dln_full;                                       // (N, C)
  if (c.moe.is_moe_layer(gl)) {
    moe_mlp_backward(ctx, w.moe, g.moe, a, li, dy, dmlp_in);
    // With TP every rank computes the whole MoE MLP (its weights are not split over TP): one copy of its
    // input gradient enters the TP reduction below, which sums the dense branches' partial gradients.
    if (c.tp_rank != 0) be.fill_zero(dmlp_in, std::size_t(s.N) * s.C * dtype_size(be.compute_dtype()));
  } else
    dense_mlp_backward(ctx, w, g, a, li, dy, dmlp_in);
  if (c.parallel_residual == ParallelResidual::None) {
    // dres becomes dL/d(res_mid): the residual path plus the pre-MLP norm's input gradient.
    ctx.hooks.column_input_backward({HookSite::Fc1, gl}, a.dln_local, a.dln_full, s.N, s.N_seq, s.C);
    norm_backward(ctx, a.dres, g.ln2, a.dln_local, la.res_mid, w.ln2, la.ln2_mean, la.ln2_rstd);
  }

  // ---- attention branch: dres = dL/d(attention branch output) ----
  dy = row_parallel_branch_grad(ctx, a, HookSite::Proj, gl, DropoutSite::AttentionOut);
  linear_backward(ctx, li, Fp8Gemm::Proj, a.train, a.datty, g.proj_w, g.proj_b, dy, la.atty, w.proj_w, s.N, s.ATT, s.C,
                  false);  // (N, ATT)
  if (c.cp_size > 1)
    ctx.hooks.context_attention_backward({HookSite::Attention, gl}, a.dqkv, a.datty, la.qkv, la.atty, la.lse, s.B, s.T,
                                         s.NH, s.NKV, s.HS, a.train ? c.attention_dropout : 0.0f, a.dropout_seed,
                                         dropout_offset(ctx, gl, DropoutSite::AttentionProbs), attention_heads(ctx));
  else
    be.attention_backward(a.dqkv, a.datty, la.qkv, la.atty, la.lse, a.has_segments ? a.segment_ids : nullptr, s.B, s.T,
                          s.NH, s.NKV, s.HS, a.train ? c.attention_dropout : 0.0f, a.dropout_seed,
                          dropout_offset(ctx, gl, DropoutSite::AttentionProbs), attention_heads(ctx),
                          c.attention_window(gl));  // (N, QKV)
  if (c.position_embedding == PositionEmbedding::Rope)
    be.rope(a.dqkv, a.positions, s.N, s.NH, s.NKV, s.HS, s.rotary_dim, c.rotary_base, c.rotary_interleaved, true,
            c.rope_scaling);
  // This rank's heads' share of the Q/K norm weight gradients (the TP ranks' shares are summed after backward).
  if (c.qk_layernorm)
    be.qk_norm_backward(a.dqkv, g.q_ln_w, g.k_ln_w, la.qk_in, w.q_ln_w, w.k_ln_w, la.qk_rstd, s.N, s.NH, s.NKV, s.HS,
                        c.apply_layernorm_1p);
  if (c.qk_l2_norm)
    be.qk_norm_backward(a.dqkv, nullptr, nullptr, la.qk_in, nullptr, nullptr, la.qk_rstd, s.N, s.NH, s.NKV, s.HS);
  // With shared_norm the MLP's input gradient is already in dln_full: accumulate onto it.
  linear_backward(ctx, li, Fp8Gemm::Qkv, a.train, a.dln_full, g.qkv_w, g.qkv_b, a.dqkv, la.ln1_full, w.qkv_w, s.N, s.C,
                  s.QKV, shared);

  // ---- norms: accumulate the branch input gradients onto the residual path ----
  if (two) {
    void* dln2_local = c.sequence_parallel ? a.dtmp_local : a.dln2_full;
    ctx.hooks.column_input_backward({HookSite::Fc1, gl}, dln2_local, a.dln2_full, s.N, s.N_seq, s.C);
    norm_backward(ctx, a.dres, g.ln2, dln2_local, x, w.ln2, la.ln2_mean, la.ln2_rstd);
  }
  ctx.hooks.column_input_backward({HookSite::Qkv, gl}, a.dln_local, a.dln_full, s.N, s.N_seq, s.C);
  norm_backward(ctx, a.dres, g.ln1, a.dln_local, x, w.ln1, la.ln1_mean, la.ln1_rstd);
}

}  // namespace gptrain
