// The ends of the model: token/position embedding (first stage) and final norm + output layer +
// fused cross-entropy (last stage).
#include "core/model/layers.h"
#include "core/model/norm.h"

namespace gptrain {

void embedding_forward(const LayerContext& ctx, const EmbeddingWeights& w, StageActivations& a, bool train) {
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  // Vocab-parallel lookup: each TP rank adds its vocabulary rows; positions are added by rank 0 only
  // so that the sum over ranks holds them once.
  const void* wpe = ctx.c.tp_rank == 0 ? w.wpe : nullptr;
  be.embedding_forward(a.emb_full, a.tokens, a.positions, w.wte, wpe, s.N, s.C, s.vocab_start, s.V,
                       ctx.c.embedding_scale());  // (N, C)
  void* local = ctx.c.sequence_parallel ? a.tmp2_local : a.emb_full;
  ctx.hooks.row_output_forward({HookSite::Embedding, -1}, local, a.emb_full, s.N, s.N_seq, s.C);
  const std::size_t nC = std::size_t(s.N_seq) * s.C;
  const float p = ctx.c.hidden_dropout;
  if (train && p > 0.0f)
    be.dropout_forward(a.res[0], local, nC, p, a.dropout_seed,
                       dropout_offset(ctx, ctx.c.num_layers, DropoutSite::Embedding));
  else
    be.copy(a.res[0], local, nC * dtype_size(be.compute_dtype()));
}

void embedding_backward(const LayerContext& ctx, const EmbeddingGrads& g, StageActivations& a) {
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  void* dy_local = a.dres;  // (N_seq, C)
  const float p = ctx.c.hidden_dropout;
  if (a.train && p > 0.0f) {
    be.dropout_backward(a.dtmp_local, a.dres, std::size_t(s.N_seq) * s.C, p, a.dropout_seed,
                        dropout_offset(ctx, ctx.c.num_layers, DropoutSite::Embedding));
    dy_local = a.dtmp_local;
  }
  void* dy_full = ctx.c.sequence_parallel ? a.dtmp_full : dy_local;  // (N, C)
  ctx.hooks.row_output_backward({HookSite::Embedding, -1}, dy_full, dy_local, s.N, s.N_seq, s.C);
  be.embedding_backward(g.wte, g.wpe, dy_full, a.tokens, a.positions, s.N, s.C, s.vocab_start, s.V,
                        ctx.c.embedding_scale());
}

void head_forward(const LayerContext& ctx, const HeadWeights& w, StageActivations& a, bool input_normed) {
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  const void* x = a.res[ctx.c.num_local_layers()];  // (N_seq, C)
  if (!input_normed) norm_forward(ctx, a.lnf, a.lnf_mean, a.lnf_rstd, x, w.lnf);
  ctx.hooks.column_input_forward({HookSite::OutputLayer, -1}, a.lnf_full, a.lnf, s.N, s.N_seq, s.C);
  be.matmul_forward(a.logits, a.lnf_full, w.out_w, w.out_b, s.N, s.C, s.V);  // (N, V)
  be.xent_stats(a.xent, a.logits, a.targets, s.N, s.V, s.V_valid, s.vocab_start);
  ctx.hooks.combine_xent_stats(a.xent, s.N);
  be.xent_loss(a.losses, a.xent, s.N);  // (N)
  be.copy_to_host(a.host_losses.data(), a.losses, std::size_t(s.N) * sizeof(float));
}

void head_backward(const LayerContext& ctx, const HeadWeights& w, const HeadGrads& g, StageActivations& a) {
  const LocalSizes& s = ctx.s;
  Backend& be = ctx.be;
  const void* x = a.res[ctx.c.num_local_layers()];
  be.xent_backward(a.logits, a.logits, a.targets, a.xent.row_max, a.xent.row_sumexp, a.dloss, s.N, s.V, s.V_valid,
                   s.vocab_start);  // dlogits (N, V) in place
  be.matmul_backward(a.dln_full, g.out_w, g.out_b, a.logits, a.lnf_full, w.out_w, s.N, s.C, s.V, false);  // (N, C)
  ctx.hooks.column_input_backward({HookSite::OutputLayer, -1}, a.dln_local, a.dln_full, s.N, s.N_seq, s.C);
  be.fill_zero(a.dres, std::size_t(s.N_seq) * s.C * dtype_size(be.compute_dtype()));
  norm_backward(ctx, a.dres, g.lnf, a.dln_local, x, w.lnf, a.lnf_mean, a.lnf_rstd);
}

}  // namespace gptrain
