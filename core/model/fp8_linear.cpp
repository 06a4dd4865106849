#include "core/model/fp8_linear.h"

#include "core/common/error.h"
#include "core/model/fp8_scaling.h"
#include "core/model/layers.h"

#include <algorithm>

namespace gptrain {

Fp8StageState::Sizes Fp8StageState::sizes_for(DType compute, const StageConfig& c, const LocalSizes& s, bool fallback) {
  Sizes z;
  if (!c.fp8.enabled) return z;
  const std::size_t N = std::size_t(s.N), es = dtype_size(compute);
  const std::size_t in = std::max({s.C, s.ATT, s.F}), out = std::max({s.QKV, s.C, s.F1});
  const std::size_t w =
      std::max({std::size_t(s.QKV) * s.C, std::size_t(s.C) * s.ATT, std::size_t(s.F1) * s.C, std::size_t(s.C) * s.F});
  z.state = (std::size_t(c.num_local_layers()) * kFp8TensorsPerLayer * fp8_state_stride(c.fp8) + 1) * sizeof(float);
  z.input_codes = N * in;
  z.weight_codes = w;
  z.grad_codes = N * out;
  z.grad_codes_t = N * out;
  if (fallback) {
    z.input_q = N * in * es;
    z.weight_q = w * es;
    z.grad_q = N * out * es;
  }
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

// One operand (R, C): its FP8 codes fp8(src * scale) into out and/or their transpose into out_t; returns the
// scale_inv that reads them back. The scale is the tensor's delayed scale, or with current scaling the one of
// src's own amax (over the TP ranks: every layout quantises alike; Transformer Engine scales a TP-split
// weight per shard). record: a training pass max-es src's amax into the history's running slot (delayed
// scaling).
const float* quantize(const LayerContext& ctx, float* e, const void* src, int R, int C, Fp8Kind kind, bool record,
                      uint8_t* out, uint8_t* out_t) {
  const Fp8StageState& f = *ctx.fp8;
  Backend& be = ctx.be;
  const int L = f.config->amax_history_len;
  float* scale = e + L;
  if (f.config->recipe == Fp8Recipe::Tensorwise) {
    be.fill_zero(f.amax_scratch, sizeof(float));
    be.fp8_cast_transpose(out ? out : nullptr, out ? nullptr : out_t, f.amax_scratch, src, scale, R, C,
                          kind);                // the amax pass
    ctx.hooks.reduce_fp8_amax(f.amax_scratch);  // the whole tensor's amax when TP splits it
    float amax = 0.0f;
    be.copy_to_host(&amax, f.amax_scratch, sizeof(float));
    const float s = fp8_current_scale(amax, fp8_max_value(kind));
    const float host[2] = {s, 1.0f / s};
    be.copy_to_device(scale, host, sizeof(host));
    record = false;
  }
  be.fp8_cast_transpose(out, out_t, record ? e : nullptr, src, scale, R, C, kind);
  return e + L + 1;
}

// The fallback's operand: the codes read back as code * scale_inv into the compute-dtype scratch dst.
const void* dequantize(const LayerContext& ctx, void* dst, const uint8_t* codes, const float* scale_inv, std::size_t n,
                       Fp8Kind kind) {
  check(dst != nullptr, "FP8 linear: the backend refused an fp8_gemm but holds no dequantising scratch");
  ctx.be.fp8_dequantize(dst, codes, scale_inv, n, kind);
  return dst;
}

}  // namespace

// The GEMMs run on the FP8 codes (fp8_gemm: fp32 accumulation, the two scales applied to the sum; the
// forward with fast accumulation, the gradients without, as Transformer Engine splits them), or in the
// fallback as the plain matmul ops on the dequantised values (the same products, each operand scaled
// before the sum). Biases stay unquantised, and their gradient is taken from the unquantised output
// gradient, as Transformer Engine does.
void linear_forward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* out, const void* inp,
                    const void* w, const void* b, int N, int IC, int OC) {
  Backend& be = ctx.be;
  if (!fp8_layer(ctx, li)) return be.matmul_forward(out, inp, w, b, N, IC, OC);
  const Fp8StageState& f = *ctx.fp8;
  const Fp8Kind k = f.config->forward_kind();
  const float* xs = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Input), inp, N, IC, k, train, f.input_codes, nullptr);
  const float* ws = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Weight), w, OC, IC, k, train, f.weight_codes, nullptr);
  if (be.fp8_gemm_accepts(out, f.input_codes, f.weight_codes, N, OC, IC))
    return be.fp8_gemm(out, false, f.input_codes, k, xs, f.weight_codes, k, ws, N, OC, IC, 1.0f, false, nullptr, true,
                       b);
  const void* xq = dequantize(ctx, f.input_q, f.input_codes, xs, std::size_t(N) * IC, k);
  const void* wq = dequantize(ctx, f.weight_q, f.weight_codes, ws, std::size_t(OC) * IC, k);
  be.matmul_forward(out, xq, wq, b, N, IC, OC);
}

void linear_backward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* dinp, float* dw, float* db,
                     const void* dout, const void* inp, const void* w, int N, int IC, int OC, bool accumulate_dinp) {
  Backend& be = ctx.be;
  if (!fp8_layer(ctx, li)) return be.matmul_backward(dinp, dw, db, dout, inp, w, N, IC, OC, accumulate_dinp);
  const Fp8StageState& f = *ctx.fp8;
  const Fp8Config& c = *f.config;
  const Fp8Kind kf = c.forward_kind(), kg = c.grad_kind();
  // --no-fp8-wgrad (Megatron passes it to the delayed recipe only): the weight gradient from the
  // unquantised output gradient and input.
  const bool fp8_wgrad = dw != nullptr && (c.wgrad || c.recipe != Fp8Recipe::Delayed);
  // dX (N, IC) = dY (N, OC) W (OC, IC): fp8_gemm's b is W^T; dW (OC, IC) += dY^T (OC, N) X (N, IC): a is
  // dY^T, b is X^T.
  const bool native_dgrad = dinp != nullptr && be.fp8_gemm_accepts(dinp, f.grad_codes, f.weight_codes, N, IC, OC);
  const bool native_wgrad = fp8_wgrad && be.fp8_gemm_accepts(dw, f.grad_codes_t, f.input_codes, OC, IC, N);
  // The forward operands again with the step's scales give the forward's codes (their amaxes are recorded
  // already); the output gradient's amax is recorded here.
  const float* gs = quantize(ctx, entry(ctx, li, gemm, Fp8Role::OutputGrad), dout, N, OC, kg, train, f.grad_codes,
                             native_wgrad ? f.grad_codes_t : nullptr);
  const void* gq = nullptr;  // the fallback's dequantised dY, once
  auto dequantized_grad = [&] {
    if (!gq) gq = dequantize(ctx, f.grad_q, f.grad_codes, gs, std::size_t(N) * OC, kg);
    return gq;
  };
  if (dinp) {
    uint8_t* wc = f.weight_codes;
    const float* ws = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Weight), w, OC, IC, kf, false,
                               native_dgrad ? nullptr : wc, native_dgrad ? wc : nullptr);
    if (native_dgrad) {
      be.fp8_gemm(dinp, false, f.grad_codes, kg, gs, wc, kf, ws, N, IC, OC, 1.0f, accumulate_dinp, nullptr, false);
    } else {
      const void* wq = dequantize(ctx, f.weight_q, wc, ws, std::size_t(OC) * IC, kf);
      be.matmul_backward(dinp, nullptr, nullptr, dequantized_grad(), inp, wq, N, IC, OC, accumulate_dinp);
    }
  }
  if (fp8_wgrad) {
    uint8_t* xc = f.input_codes;
    const float* xs = quantize(ctx, entry(ctx, li, gemm, Fp8Role::Input), inp, N, IC, kf, false,
                               native_wgrad ? nullptr : xc, native_wgrad ? xc : nullptr);
    if (native_wgrad) {
      be.fp8_gemm(dw, true, f.grad_codes_t, kg, gs, xc, kf, xs, OC, IC, N, 1.0f, true, nullptr, false);
    } else {
      const void* xq = dequantize(ctx, f.input_q, xc, xs, std::size_t(N) * IC, kf);
      be.matmul_backward(nullptr, dw, nullptr, dequantized_grad(), xq, w, N, IC, OC, false);
    }
  } else if (dw) {
    be.matmul_backward(nullptr, dw, nullptr, dout, inp, w, N, IC, OC, false);
  }
  if (db) be.matmul_backward(nullptr, nullptr, db, dout, inp, w, N, IC, OC, false);
}

}  // namespace gptrain
