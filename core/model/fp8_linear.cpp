#include "core/model/fp8_linear.h"

#include "core/model/fp8_scaling.h"
#include "core/model/layers.h"

#include <algorithm>

namespace gptrain {

Fp8StageState::Sizes Fp8StageState::sizes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  Sizes z;
  if (!c.fp8.enabled) return z;
  const std::size_t N = std::size_t(s.N), es = dtype_size(compute);
  const std::size_t in = std::max({s.C, s.ATT, s.F}), out = std::max({s.QKV, s.C, s.F1});
  const std::size_t w =
      std::max({std::size_t(s.QKV) * s.C, std::size_t(s.C) * s.ATT, std::size_t(s.F1) * s.C, std::size_t(s.C) * s.F});
  z.state = (std::size_t(c.num_local_layers()) * kFp8TensorsPerLayer * fp8_state_stride(c.fp8) + 1) * sizeof(float);
  z.bytes = std::max({N * in, N * out, w});
  z.input_q = N * in * es;
  z.weight_q = w * es;
  z.grad_q = N * out * es;
  return z;
}

namespace {

bool fp8_layer(const LayerContext& ctx, int li) {
  return ctx.fp8 && ctx.fp8->config->layer_in_fp8(ctx.c.layer_first + li, ctx.c.num_layers);
}

float* entry(const LayerContext& ctx, int li, Fp8Gemm gemm, Fp8Role role) {
  const Fp8StageState& f = *ctx.fp8;
  return f.state + (std::size_t(li) * kFp8TensorsPerLayer + fp8_tensor_index(gemm, role)) *
                       std::size_t(fp8_state_stride(*f.config));
}

// One operand: its FP8 codes fp8(src * scale), read back as code * scale_inv into dst (compute dtype). The
// scale is the tensor's delayed scale, or with current scaling the one of src's own amax (over the TP ranks:
// every layout quantises alike; Transformer Engine scales a TP-split weight per shard). record: a
// training pass max-es src's amax into the history's running slot (delayed scaling).
const void* quantize(const LayerContext& ctx, float* e, const void* src, int R, int C, Fp8Kind kind, bool record,
                     void* dst) {
  const Fp8StageState& f = *ctx.fp8;
  Backend& be = ctx.be;
  const int L = f.config->amax_history_len;
  float* scale = e + L;
  float* scale_inv = e + L + 1;
  if (f.config->recipe == Fp8Recipe::Tensorwise) {
    be.fill_zero(f.amax_scratch, sizeof(float));
    be.fp8_cast_transpose(f.bytes, nullptr, f.amax_scratch, src, scale, R, C, kind);  // the amax pass
    ctx.hooks.reduce_fp8_amax(f.amax_scratch);  // the whole tensor's amax when TP splits it
    float amax = 0.0f;
    be.copy_to_host(&amax, f.amax_scratch, sizeof(float));
    const float s = fp8_current_scale(amax, fp8_max_value(kind));
    const float host[2] = {s, 1.0f / s};
    be.copy_to_device(scale, host, sizeof(host));
    record = false;
  }
  be.fp8_cast_transpose(f.bytes, nullptr, record ? e : nullptr, src, scale, R, C, kind);
  be.fp8_dequantize(dst, f.bytes, scale_inv, std::size_t(R) * C, kind);
  return dst;
}

}  // namespace

// The FP8 GEMMs of this path are the plain matmul ops on the operands' exact FP8 values (dequantised into
// the scratch; fp32 accumulation on CPU, the backend's GEMM accumulation on CUDA). Biases stay unquantised,
// and their gradient is taken from the unquantised output gradient, as Transformer Engine does.
void linear_forward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* out, const void* inp,
                    const void* w, const void* b, int N, int IC, int OC) {
  if (!fp8_layer(ctx, li)) return ctx.be.matmul_forward(out, inp, w, b, N, IC, OC);
  const Fp8StageState& f = *ctx.fp8;
  const Fp8Kind k = f.config->forward_kind();
  const void* xq = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Input), inp, N, IC, k, train, f.input_q);
  const void* wq = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Weight), w, OC, IC, k, train, f.weight_q);
  ctx.be.matmul_forward(out, xq, wq, b, N, IC, OC);
}

void linear_backward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* dinp, float* dw, float* db,
                     const void* dout, const void* inp, const void* w, int N, int IC, int OC, bool accumulate_dinp) {
  Backend& be = ctx.be;
  if (!fp8_layer(ctx, li)) return be.matmul_backward(dinp, dw, db, dout, inp, w, N, IC, OC, accumulate_dinp);
  const Fp8StageState& f = *ctx.fp8;
  const Fp8Config& c = *f.config;
  // The forward operands again, with the step's scales (the same codes the forward used; their amaxes are
  // recorded already).
  const void* xq = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Input), inp, N, IC, c.forward_kind(), false, f.input_q);
  const void* wq = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Weight), w, OC, IC, c.forward_kind(), false, f.weight_q);
  const void* gq =
      quantize(ctx, entry(ctx, li, gemm, Fp8Role::OutputGrad), dout, N, OC, c.grad_kind(), train, f.grad_q);
  // --no-fp8-wgrad (Megatron passes it to the delayed recipe only): the weight gradient from the
  // unquantised output gradient and input.
  const bool fp8_wgrad = c.wgrad || c.recipe != Fp8Recipe::Delayed;
  be.matmul_backward(dinp, fp8_wgrad ? dw : nullptr, nullptr, gq, xq, wq, N, IC, OC, accumulate_dinp);
  if (!fp8_wgrad) be.matmul_backward(nullptr, dw, nullptr, dout, inp, w, N, IC, OC, false);
  if (db) be.matmul_backward(nullptr, nullptr, db, dout, inp, w, N, IC, OC, false);
}

}  // namespace gptrain
