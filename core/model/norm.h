// LayerNorm or RMSNorm over (N_seq, C) rows, picked by the config (RMSNorm has no bias or mean), alone
// or fused with the residual add that produces its input. With apply_layernorm_1p the weights hold
// gamma - 1 (the backend adds the 1).
#pragma once

#include "core/model/layers.h"

namespace gptrain {

inline void norm_forward(const LayerContext& ctx, void* out, float* mean, float* rstd, const void* inp,
                         const NormWeights& w) {
  if (ctx.c.normalization == Normalization::LayerNorm)
    ctx.be.layernorm_forward(out, mean, rstd, inp, w.w, w.b, ctx.s.N_seq, ctx.s.C, ctx.c.norm_epsilon,
                             ctx.c.apply_layernorm_1p);
  else
    ctx.be.rmsnorm_forward(out, rstd, inp, w.w, ctx.s.N_seq, ctx.s.C, ctx.c.norm_epsilon, ctx.c.apply_layernorm_1p);
}

// residual_out = a + b and norm_out = norm(residual_out), (N_seq, C) each: one fused op, or add then
// norm when ctx.c.fused_ops is off. residual_out may alias a or b.
inline void residual_norm_forward(const LayerContext& ctx, void* residual_out, void* norm_out, float* mean, float* rstd,
                                  const void* a, const void* b, const NormWeights& w) {
  const LocalSizes& s = ctx.s;
  if (!ctx.c.fused_ops) {
    ctx.be.add(residual_out, a, b, std::size_t(s.N_seq) * s.C);
    norm_forward(ctx, norm_out, mean, rstd, residual_out, w);
  } else if (ctx.c.normalization == Normalization::LayerNorm) {
    ctx.be.residual_layernorm_forward(residual_out, norm_out, mean, rstd, a, b, w.w, w.b, s.N_seq, s.C,
                                      ctx.c.norm_epsilon, ctx.c.apply_layernorm_1p);
  } else {
    ctx.be.residual_rmsnorm_forward(residual_out, norm_out, rstd, a, b, w.w, s.N_seq, s.C, ctx.c.norm_epsilon,
                                    ctx.c.apply_layernorm_1p);
  }
}

// dinp_acc (N_seq, C) += input gradient; weight gradients +=. With dinp_acc the residual-stream
// gradient this is also the backward of residual_norm_forward (both addends get the stream's gradient).
inline void norm_backward(const LayerContext& ctx, void* dinp_acc, const NormGrads& g, const void* dout,
                          const void* inp, const NormWeights& w, const float* mean, const float* rstd) {
  if (ctx.c.normalization == Normalization::LayerNorm)
    ctx.be.layernorm_backward(dinp_acc, g.w, g.b, dout, inp, w.w, mean, rstd, ctx.s.N_seq, ctx.s.C,
                              ctx.c.apply_layernorm_1p);
  else
    ctx.be.rmsnorm_backward(dinp_acc, g.w, dout, inp, w.w, rstd, ctx.s.N_seq, ctx.s.C, ctx.c.apply_layernorm_1p);
}

}  // namespace gptrain
