// LayerNorm or RMSNorm over (N_seq, C) rows, picked by the config (RMSNorm has no bias or mean).
#pragma once

#include "core/model/layers.h"

namespace gptrain {

inline void norm_forward(const LayerContext& ctx, void* out, float* mean, float* rstd, const void* inp,
                         const NormWeights& w) {
  if (ctx.c.normalization == Normalization::LayerNorm)
    ctx.be.layernorm_forward(out, mean, rstd, inp, w.w, w.b, ctx.s.N_seq, ctx.s.C, ctx.c.norm_epsilon);
  else
    ctx.be.rmsnorm_forward(out, rstd, inp, w.w, ctx.s.N_seq, ctx.s.C, ctx.c.norm_epsilon);
}

// dinp_acc (N_seq, C) += input gradient; weight gradients +=.
inline void norm_backward(const LayerContext& ctx, void* dinp_acc, const NormGrads& g, const void* dout,
                          const void* inp, const NormWeights& w, const float* mean, const float* rstd) {
  if (ctx.c.normalization == Normalization::LayerNorm)
    ctx.be.layernorm_backward(dinp_acc, g.w, g.b, dout, inp, w.w, mean, rstd, ctx.s.N_seq, ctx.s.C);
  else
    ctx.be.rmsnorm_backward(dinp_acc, g.w, dout, inp, w.w, rstd, ctx.s.N_seq, ctx.s.C);
}

}  // namespace gptrain
