// Host simulation of the tensor-core flash-attention kernels (kernels/attention/attention_tc.cu): the
// same tile sizes, tile loops (causal tile skipping, ragged last tile, GQA group loop, 2 lanes per row
// in the forward softmax) and the same helpers from attention_tc_math.h, run in fp32 and compared with
// the CPU twin. The WMMA products are plain dot products here and nothing is rounded to 16 bits, so
// agreement to fp32 precision says the tiling and the per-element maths are right; what the GPU adds
// (fragment loads, 16-bit P/dS) is covered by tests/gpu/test_gpu_attention_tc.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_tc_math.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;
using namespace gptrain::attn_tc;

namespace {

struct Dims {
  int B, T, NH, NKV, HS;
  int W() const { return (NH + 2 * NKV) * HS; }
  std::size_t qkv() const { return std::size_t(B) * T * W(); }
  std::size_t out() const { return std::size_t(B) * T * NH * HS; }
  std::size_t lse() const { return std::size_t(B) * NH * T; }
};

struct Run {
  float p = 0.0f;
  uint64_t seed = 99, offset = 5;
  const int32_t* seg = nullptr;  // (B, T) or null
  int window = -1;               // sliding window (attention_math.h); -1 none
};

// Row `pos` of head slot `slot` of qkv; positions past T read as zeros (the kernels' zero-filled tiles).
float qkv_at(const std::vector<float>& qkv, const Dims& d, int b, int pos, int slot, int c) {
  return pos < d.T ? qkv[(std::size_t(b) * d.T + pos) * d.W() + slot * d.HS + c] : 0.0f;
}

float dot_rows(const std::vector<float>& x, std::size_t xo, const std::vector<float>& y, std::size_t yo, int n) {
  float acc = 0.0f;
  for (int c = 0; c < n; ++c) acc += x[xo + c] * y[yo + c];
  return acc;
}

// tc_forward_kernel, one query row at a time: per key tile, the scores (the WMMA product), the two
// lanes' halves of the online-softmax step, and O = O c + P V.
void sim_forward(std::vector<float>& out, std::vector<float>& lse, const std::vector<float>& qkv, const Dims& d,
                 const Run& run) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.HS)), dscale = dropout_scale(run.p);
  const int qtiles = (d.T + kBr - 1) / kBr;
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h)
      for (int qtile = 0; qtile < qtiles; ++qtile) {
        const int t0 = qtile * kBr, kvh = h / (d.NH / d.NKV);
        const int32_t* seg = run.seg ? run.seg + std::size_t(b) * d.T : nullptr;
        for (int row = 0; row < kBr; ++row) {
          const int t = t0 + row;
          float m = -INFINITY, l = 0.0f;
          std::vector<float> o(d.HS, 0.0f), S(kBc), P(kBc);
          for (int i = 0; i < attention_kv_tiles(t0, d.T, run.window); ++i) {
            const int s0 = (attention_kv_tile_first(t0, run.window) + i) * kBc;
            for (int c = 0; c < kBc; ++c) {
              float acc = 0.0f;
              for (int k = 0; k < d.HS; ++k)
                acc += qkv_at(qkv, d, b, t, h, k) * qkv_at(qkv, d, b, s0 + c, d.NH + kvh, k);
              S[c] = acc;
            }
            float x[2][kHalfRow], mx[2], sum[2] = {0.0f, 0.0f};
            for (int half = 0; half < 2; ++half) {
              for (int i = 0; i < kHalfRow; ++i) {
                const int c = 2 * i + half;
                x[half][i] = attention_visible(t, s0 + c, d.T, seg, run.window) ? S[c] * scale : -INFINITY;
              }
              mx[half] = online_softmax_max(x[half], kHalfRow);
            }
            const float m_new = std::fmax(m, std::fmax(mx[0], mx[1]));
            const float corr = online_softmax_rescale(m, m_new);
            for (int half = 0; half < 2; ++half)
              for (int i = 0; i < kHalfRow; ++i) {
                const int c = 2 * i + half;
                const float p = online_softmax_prob(x[half][i], m_new);
                sum[half] += p;
                const bool keep = p > 0.0f && attention_keep(run.p, run.seed, run.offset, b, h, t, s0 + c, d.NH, d.T);
                P[c] = keep ? p * dscale : 0.0f;
              }
            l = l * corr + (sum[0] + sum[1]);
            m = m_new;
            for (int k = 0; k < d.HS; ++k) {
              float acc = o[k] * corr;
              for (int c = 0; c < kBc; ++c) acc += P[c] * qkv_at(qkv, d, b, s0 + c, d.NH + d.NKV + kvh, k);
              o[k] = acc;
            }
          }
          if (t >= d.T) continue;
          for (int k = 0; k < d.HS; ++k)
            out[(std::size_t(b) * d.T + t) * d.NH * d.HS + h * d.HS + k] = l > 0.0f ? o[k] / l : 0.0f;
          lse[(std::size_t(b) * d.NH + h) * d.T + t] = online_softmax_lse(m, l);
        }
      }
}

// tc_rowdot_kernel + tc_backward_dq_kernel + tc_backward_dkv_kernel.
void sim_backward(std::vector<float>& dqkv, const std::vector<float>& dout, const std::vector<float>& qkv,
                  const std::vector<float>& out, const std::vector<float>& lse, const Dims& d, const Run& run) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.HS)), dscale = dropout_scale(run.p);
  const int W = d.W(), WO = d.NH * d.HS, group = d.NH / d.NKV;
  std::vector<float> D(d.lse());
  for (int b = 0; b < d.B; ++b)
    for (int t = 0; t < d.T; ++t)
      for (int h = 0; h < d.NH; ++h) {
        const std::size_t o = (std::size_t(b) * d.T + t) * WO + h * d.HS;
        D[(std::size_t(b) * d.NH + h) * d.T + t] = dot_rows(dout, o, out, o, d.HS);
      }
  // The (p', ds) of one score, as both backward kernels compute it; false when masked.
  auto grad_of = [&](int b, int h, int t, int s, const int32_t* seg, AttnGrad& g) {
    if (!attention_visible(t, s, d.T, seg, run.window)) return false;
    const int kvh = h / group;
    const std::size_t qo = (std::size_t(b) * d.T + t) * W + h * d.HS,
                      ko = (std::size_t(b) * d.T + s) * W + (d.NH + kvh) * d.HS;
    const std::size_t vo = ko + std::size_t(d.NKV) * d.HS, oo = (std::size_t(b) * d.T + t) * WO + h * d.HS;
    const std::size_t li = (std::size_t(b) * d.NH + h) * d.T + t;
    const float p = std::exp(dot_rows(qkv, qo, qkv, ko, d.HS) * scale - lse[li]);
    g = attention_prob_grad(p, dot_rows(dout, oo, qkv, vo, d.HS), D[li],
                            attention_keep(run.p, run.seed, run.offset, b, h, t, s, d.NH, d.T), dscale);
    return true;
  };
  // dQ: (query tile, head, batch), key tiles up to the causal edge
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h)
      for (int t0 = 0; t0 < d.T; t0 += kBr) {
        const int32_t* seg = run.seg ? run.seg + std::size_t(b) * d.T : nullptr;
        const int kvh = h / group;
        for (int t = t0; t < std::min(d.T, t0 + kBr); ++t) {
          std::vector<float> dq(d.HS, 0.0f);
          const int kt0 = attention_kv_tile_first(t0, run.window);
          for (int kt = kt0; kt < kt0 + attention_kv_tiles(t0, d.T, run.window); ++kt)
            for (int s = kt * kBc; s < (kt + 1) * kBc; ++s) {
              AttnGrad g{};
              if (!grad_of(b, h, t, s, seg, g)) continue;
              for (int k = 0; k < d.HS; ++k) dq[k] += g.ds * qkv_at(qkv, d, b, s, d.NH + kvh, k);
            }
          for (int k = 0; k < d.HS; ++k) dqkv[(std::size_t(b) * d.T + t) * W + h * d.HS + k] = dq[k] * scale;
        }
      }
  // dK, dV: (key tile, KV head, batch), the group's heads in order, query tiles from the diagonal on
  for (int b = 0; b < d.B; ++b)
    for (int kvh = 0; kvh < d.NKV; ++kvh)
      for (int s0 = 0; s0 < d.T; s0 += kBc) {
        const int32_t* seg = run.seg ? run.seg + std::size_t(b) * d.T : nullptr;
        std::vector<float> dk(std::size_t(kBc) * d.HS, 0.0f), dv(std::size_t(kBc) * d.HS, 0.0f);
        for (int item = 0; item < attention_dkv_items(s0, d.T, group, run.window); ++item) {
          const auto [h, t0] = attention_dkv_item(item, s0, d.T, kvh, group, run.window);
          for (int c = 0; c < kBc; ++c)
            for (int q = 0; q < kBr; ++q) {
              AttnGrad g{};
              if (!grad_of(b, h, t0 + q, s0 + c, seg, g)) continue;
              const std::size_t qo = (std::size_t(b) * d.T + t0 + q) * W + h * d.HS;
              const std::size_t oo = (std::size_t(b) * d.T + t0 + q) * WO + h * d.HS;
              for (int k = 0; k < d.HS; ++k) {
                dv[std::size_t(c) * d.HS + k] += g.pd * dout[oo + k];
                dk[std::size_t(c) * d.HS + k] += g.ds * qkv[qo + k];
              }
            }
        }
        for (int c = 0; c < kBc && s0 + c < d.T; ++c)
          for (int k = 0; k < d.HS; ++k) {
            const std::size_t row = (std::size_t(b) * d.T + s0 + c) * W;
            dqkv[row + (d.NH + kvh) * d.HS + k] = dk[std::size_t(c) * d.HS + k] * scale;
            dqkv[row + (d.NH + d.NKV + kvh) * d.HS + k] = dv[std::size_t(c) * d.HS + k];
          }
      }
}

// Simulation vs CPU twin on one case; outputs start as NaN so an element no tile writes fails.
void check_case(const Dims& d, bool segments, float p, float input_scale, int window = -1) {
  INFO("B=" << d.B << " T=" << d.T << " NH=" << d.NH << " NKV=" << d.NKV << " HS=" << d.HS << " segments=" << segments
            << " dropout=" << p << " window=" << window);
  const std::vector<float> qkv = randn(d.qkv(), 11, input_scale), dout = randn(d.out(), 12);
  std::vector<int32_t> seg(std::size_t(d.B) * d.T);
  for (int b = 0; b < d.B; ++b)
    for (int t = 0; t < d.T; ++t) seg[std::size_t(b) * d.T + t] = (t * 3) / d.T + (t % 37 == 36 ? 7 : 0);
  Run run;
  run.p = p;
  run.seg = segments ? seg.data() : nullptr;
  run.window = window;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(d.out(), nan), lse(d.lse(), nan), ref_out(d.out()), ref_lse(d.lse());
  sim_forward(out, lse, qkv, d, run);
  cpu::attention_forward(ref_out.data(), ref_lse.data(), qkv.data(), run.seg, d.B, d.T, d.NH, d.NKV, d.HS, p, run.seed,
                         run.offset, {}, window);
  CHECK(rel_err(out, ref_out) < 2e-6);
  CHECK(rel_err(lse, ref_lse) < 2e-6);
  std::vector<float> dqkv(d.qkv(), nan), ref_dqkv(d.qkv());
  sim_backward(dqkv, dout, qkv, ref_out, ref_lse, d, run);
  cpu::attention_backward(ref_dqkv.data(), dout.data(), qkv.data(), ref_out.data(), ref_lse.data(), run.seg, d.B, d.T,
                          d.NH, d.NKV, d.HS, p, run.seed, run.offset, {}, window);
  CHECK(rel_err(dqkv, ref_dqkv) < 1e-5);
}

}  // namespace

TEST_CASE("attention tc helpers: online softmax rescale and masked entries", "[attention]") {
  CHECK(online_softmax_rescale(-INFINITY, 1.0f) == 0.0f);
  CHECK(online_softmax_rescale(-INFINITY, -INFINITY) == 0.0f);  // row with nothing visible yet: no NaN
  CHECK(online_softmax_rescale(2.0f, 3.0f) == Approx(std::exp(-1.0f)));
  CHECK(online_softmax_prob(-INFINITY, -INFINITY) == 0.0f);
  CHECK(online_softmax_prob(1.0f, 1.0f) == 1.0f);
  const float x[4] = {-INFINITY, 0.5f, -2.0f, -INFINITY};
  CHECK(online_softmax_max(x, 4) == 0.5f);
  CHECK(online_softmax_max(x, 1) == -INFINITY);
  // Two tiles folded online == one softmax over both.
  const float a[2] = {3.0f, -1.0f}, b2[2] = {7.5f, 0.25f};
  float m = online_softmax_max(a, 2), l = 0.0f;
  l = l * online_softmax_rescale(-INFINITY, m) + online_softmax_prob(a[0], m) + online_softmax_prob(a[1], m);
  const float m2 = std::fmax(m, online_softmax_max(b2, 2));
  l = l * online_softmax_rescale(m, m2) + online_softmax_prob(b2[0], m2) + online_softmax_prob(b2[1], m2);
  const double direct = std::log(std::exp(3.0) + std::exp(-1.0) + std::exp(7.5) + std::exp(0.25));
  CHECK(online_softmax_lse(m2, l) == Approx(direct).epsilon(1e-6));
}

TEST_CASE("attention tc helpers: dropped probabilities and tile ranges", "[attention]") {
  const AttnGrad kept = attention_prob_grad(0.25f, 2.0f, 0.5f, true, 1.25f);
  CHECK(kept.pd == Approx(0.3125f));
  CHECK(kept.ds == Approx(0.25f * (2.0f * 1.25f - 0.5f)));
  const AttnGrad dropped = attention_prob_grad(0.25f, 2.0f, 0.5f, false, 1.25f);
  CHECK(dropped.pd == 0.0f);
  CHECK(dropped.ds == Approx(-0.125f));
  CHECK(attention_kv_end(0, kBr, 1000) == kBr);
  CHECK(attention_kv_end(960, kBr, 1000) == 1000);  // ragged last tile
  CHECK(attention_first_query_tile(128) == 128);
  CHECK(attention_kv_tiles(0, 1000) == 1);
  CHECK(attention_kv_tiles(960, 1000) == 16);  // keys 0 .. 999: the last tile ragged
  // dK/dV items of key tile 64 with T = 200 and a group of 2 heads (KV head 1): heads 2, 3 x query tiles 64, 128.
  CHECK(attention_dkv_items(64, 200, 2) == 6);
  CHECK(attention_dkv_item(0, 64, 200, 1, 2).h == 2);
  CHECK(attention_dkv_item(2, 64, 200, 1, 2).t0 == 192);
  CHECK(attention_dkv_item(3, 64, 200, 1, 2).h == 3);
  CHECK(attention_dkv_item(3, 64, 200, 1, 2).t0 == 64);
  CHECK(attention_visible(5, 5, 6, nullptr));
  CHECK_FALSE(attention_visible(5, 6, 7, nullptr));      // future key
  CHECK_FALSE(attention_visible(6, 3, 6, nullptr));      // padding row
  CHECK(attention_visible(9, 5, 20, nullptr, 4));        // window 4: keys 5 .. 9
  CHECK_FALSE(attention_visible(9, 4, 20, nullptr, 4));  // one before the window
  // Window tile skipping: query tile 192 with window 100 starts at key 92 (tile 1); key tile 64 is seen by
  // queries up to 64 + 63 + 100 = 227, i.e. query tiles 64, 128 and 192.
  CHECK(attention_kv_tile_first(192, 100) == 1);
  CHECK(attention_kv_tiles(192, 1000, 100) == 3);
  CHECK(attention_kv_tiles(192, 1000, -1) == 4);
  CHECK(attention_dkv_items(64, 1000, 2, 100) == 6);
  CHECK(attention_dkv_item(3, 64, 1000, 1, 2, 100).h == 3);
  CHECK(attention_dkv_item(5, 64, 1000, 1, 2, 100).t0 == 192);
  // The keep test is backend.h's: philox element offset + ((b NH + h) T + t) T + s.
  const uint64_t j = 3 + ((uint64_t(1) * 4 + 2) * 50 + 7) * 50 + 5;
  CHECK(attention_keep(0.3f, 42, 3, 1, 2, 7, 5, 4, 50) == dropout_keep(philox_uniform(42, j), 0.3f));
  CHECK(attention_keep(0.0f, 42, 3, 1, 2, 7, 5, 4, 50));
}

TEST_CASE("attention tc tile simulation == cpu twin: MHA, GQA, ragged T, HS 64/128", "[attention]") {
  check_case({2, 64, 2, 2, 64}, false, 0.0f, 1.0f);   // exactly one tile
  check_case({2, 150, 4, 2, 64}, false, 0.0f, 2.0f);  // GQA, 3 tiles, the last one ragged; sharp softmax
  check_case({1, 37, 2, 1, 128}, false, 0.0f, 1.0f);  // T below one tile, MQA, HS 128
  check_case({1, 129, 4, 4, 64}, false, 0.0f, 3.0f);  // one key past two whole tiles
}

TEST_CASE("attention tc tile simulation == cpu twin: segments and dropout", "[attention]") {
  check_case({2, 140, 4, 2, 64}, true, 0.0f, 1.0f);
  check_case({1, 100, 4, 1, 64}, false, 0.2f, 1.0f);
  check_case({1, 90, 2, 2, 128}, true, 0.1f, 1.5f);
}

TEST_CASE("attention tc tile simulation == cpu twin: sliding window (tile skipping, segments, dropout)",
          "[attention]") {
  check_case({1, 200, 2, 1, 64}, false, 0.0f, 1.0f, 0);    // each query sees itself only
  check_case({2, 200, 4, 2, 64}, false, 0.0f, 2.0f, 70);   // window crosses a tile edge; whole tiles skipped
  check_case({1, 150, 2, 2, 128}, true, 0.1f, 1.0f, 30);   // segments and dropout inside the window
  check_case({1, 130, 2, 1, 64}, false, 0.2f, 1.0f, 129);  // window == T - 1: nothing hidden
}
