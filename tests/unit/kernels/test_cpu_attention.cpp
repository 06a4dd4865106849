// CPU causal attention (flash contract): forward and lse against a naive double-precision softmax
// attention (GQA, segment masks, dropout with the shared Philox mapping, T crossing query blocks),
// backward by finite differences (with and without a sliding window), a window that covers the
// sequence == no window bit for bit, GQA == MHA with repeated KV heads, and a TP rank's share of the heads
// (HeadSlice) == those heads of the whole layer, dropout masks included.
#include <cmath>

#include "kernels/attention/attention_math.h"
#include "kernels/backend.h"
#include "kernels/dropout/philox.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

struct Shape {
  int B, T, NH, NKV, HS;
  std::size_t qkv() const { return static_cast<std::size_t>(B) * T * (NH + 2 * NKV) * HS; }
  std::size_t out() const { return static_cast<std::size_t>(B) * T * NH * HS; }
  std::size_t lse() const { return static_cast<std::size_t>(B) * NH * T; }
};

// Straightforward attention: full score rows, exp/normalise in double, dropout from philox_uniform.
void naive_attention(std::vector<float>& out, std::vector<float>& lse, const std::vector<float>& qkv,
                     const int32_t* seg, const Shape& s, float p, uint64_t seed, uint64_t offset, int window = -1) {
  const int W = (s.NH + 2 * s.NKV) * s.HS;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.HS));
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h) {
      const int g = h / (s.NH / s.NKV);
      for (int t = 0; t < s.T; ++t) {
        std::vector<double> sc(s.T, -INFINITY);
        double m = -INFINITY;
        for (int k = 0; k <= t; ++k) {
          if (seg && seg[b * s.T + k] != seg[b * s.T + t]) continue;
          if (window >= 0 && t - k > window) continue;  // the window: keys t - window .. t
          double d = 0;
          for (int c = 0; c < s.HS; ++c)
            d += static_cast<double>(qkv[(b * s.T + t) * W + h * s.HS + c]) *
                 qkv[(b * s.T + k) * W + (s.NH + g) * s.HS + c];
          sc[k] = d * scale;
          m = std::fmax(m, sc[k]);
        }
        double sum = 0;
        for (int k = 0; k <= t; ++k) sum += std::isinf(sc[k]) ? 0.0 : std::exp(sc[k] - m);
        const double l = m + std::log(sum);
        lse[(b * s.NH + h) * s.T + t] = static_cast<float>(l);
        for (int c = 0; c < s.HS; ++c) {
          double o = 0;
          for (int k = 0; k <= t; ++k) {
            if (std::isinf(sc[k])) continue;
            double pr = std::exp(sc[k] - l);
            if (p > 0) {
              const uint64_t j = offset + attention_dropout_index(b, h, t, k, s.NH, s.T);
              pr = philox_uniform(seed, j) >= p ? pr / (1.0 - p) : 0.0;
            }
            o += pr * qkv[(b * s.T + k) * W + (s.NH + s.NKV + g) * s.HS + c];
          }
          out[(b * s.T + t) * s.NH * s.HS + h * s.HS + c] = static_cast<float>(o);
        }
      }
    }
}

std::vector<int32_t> segments(int B, int T) {  // documents of uneven length, restarting per row
  std::vector<int32_t> seg(static_cast<std::size_t>(B) * T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) seg[b * T + t] = (t + 7 * b) / 23;
  return seg;
}

}  // namespace

TEST_CASE("attention forward and lse match naive attention (GQA, segments, dropout, multi-block T)") {
  auto be = make_backend("cpu", DType::F32);
  for (const Shape s : {Shape{2, 70, 4, 2, 8}, Shape{1, 150, 3, 3, 16}, Shape{2, 5, 2, 1, 4}}) {
    auto qkv = randn(s.qkv(), 71);
    auto seg = segments(s.B, s.T);
    for (int with_seg = 0; with_seg < 2; ++with_seg)
      for (float p : {0.0f, 0.2f}) {
        const int32_t* sp = with_seg ? seg.data() : nullptr;
        std::vector<float> out(s.out()), lse(s.lse()), rout(s.out()), rlse(s.lse());
        be->attention_forward(out.data(), lse.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 5, 1000);
        naive_attention(rout, rlse, qkv, sp, s, p, 5, 1000);
        INFO("T=" << s.T << " seg=" << with_seg << " p=" << p);
        REQUIRE(rel_err(out, rout) < 2e-6);
        REQUIRE(max_abs_diff(lse, rlse) < 2e-5);
      }
  }
}

TEST_CASE("sliding-window attention forward and lse match naive attention (segments, dropout)") {
  auto be = make_backend("cpu", DType::F32);
  for (const Shape s : {Shape{2, 70, 4, 2, 8}, Shape{1, 150, 3, 3, 16}})
    for (int window : {0, 1, 5, 40, 70}) {
      auto qkv = randn(s.qkv(), 73);
      auto seg = segments(s.B, s.T);
      for (int with_seg = 0; with_seg < 2; ++with_seg)
        for (float p : {0.0f, 0.2f}) {
          const int32_t* sp = with_seg ? seg.data() : nullptr;
          std::vector<float> out(s.out()), lse(s.lse()), rout(s.out()), rlse(s.lse());
          be->attention_forward(out.data(), lse.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 5, 1000, {},
                                window);
          naive_attention(rout, rlse, qkv, sp, s, p, 5, 1000, window);
          INFO("T=" << s.T << " window=" << window << " seg=" << with_seg << " p=" << p);
          REQUIRE(rel_err(out, rout) < 2e-6);
          REQUIRE(max_abs_diff(lse, rlse) < 2e-5);
        }
    }
}

TEST_CASE("a window covering the sequence gives exactly plain causal attention") {
  auto be = make_backend("cpu", DType::F32);
  const Shape s{2, 70, 4, 2, 8};
  auto qkv = randn(s.qkv(), 75);
  auto r = randn(s.out(), 76);
  auto seg = segments(s.B, s.T);
  for (int window : {s.T - 1, s.T, 1 << 20})
    for (float p : {0.0f, 0.2f}) {
      std::vector<float> o0(s.out()), l0(s.lse()), d0(s.qkv()), o1(s.out()), l1(s.lse()), d1(s.qkv());
      be->attention_forward(o0.data(), l0.data(), qkv.data(), seg.data(), s.B, s.T, s.NH, s.NKV, s.HS, p, 3, 7);
      be->attention_backward(d0.data(), r.data(), qkv.data(), o0.data(), l0.data(), seg.data(), s.B, s.T, s.NH, s.NKV,
                             s.HS, p, 3, 7);
      be->attention_forward(o1.data(), l1.data(), qkv.data(), seg.data(), s.B, s.T, s.NH, s.NKV, s.HS, p, 3, 7, {},
                            window);
      be->attention_backward(d1.data(), r.data(), qkv.data(), o1.data(), l1.data(), seg.data(), s.B, s.T, s.NH, s.NKV,
                             s.HS, p, 3, 7, {}, window);
      INFO("window=" << window << " p=" << p);
      REQUIRE(o0 == o1);
      REQUIRE(l0 == l1);
      REQUIRE(d0 == d1);
    }
  std::vector<float> buf(s.qkv()), lse(s.lse());
  REQUIRE_THROWS_WITH(be->attention_forward(buf.data(), lse.data(), buf.data(), nullptr, s.B, s.T, s.NH, s.NKV, s.HS,
                                            0.0f, 0, 0, {}, -2),
                      Catch::Contains("attention_forward: window=-2 must be -1 (unlimited)"));
}

TEST_CASE("sliding-window attention backward matches finite differences (GQA, segments, dropout)") {
  auto be = make_backend("cpu", DType::F32);
  for (const Shape s : {Shape{2, 70, 4, 2, 8}, Shape{1, 9, 2, 2, 4}})
    for (int window : {0, 3, 40}) {
      auto seg = segments(s.B, s.T);
      for (int with_seg = 0; with_seg < 2; ++with_seg)
        for (float p : {0.0f, 0.25f}) {
          const int32_t* sp = with_seg ? seg.data() : nullptr;
          auto qkv = randn(s.qkv(), 83);
          auto r = randn(s.out(), 84);
          std::vector<float> out(s.out()), lse(s.lse()), dqkv(s.qkv(), 77.0f);
          be->attention_forward(out.data(), lse.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 9, 3, {},
                                window);
          be->attention_backward(dqkv.data(), r.data(), qkv.data(), out.data(), lse.data(), sp, s.B, s.T, s.NH, s.NKV,
                                 s.HS, p, 9, 3, {}, window);
          auto loss = [&] {
            std::vector<float> o(s.out()), l(s.lse());
            be->attention_forward(o.data(), l.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 9, 3, {}, window);
            return dot(o, r);
          };
          INFO("T=" << s.T << " window=" << window << " seg=" << with_seg << " p=" << p);
          check_gradient("dqkv", loss, qkv, dqkv, 120);
        }
    }
}

TEST_CASE("attention backward matches finite differences (GQA, segments, dropout)") {
  auto be = make_backend("cpu", DType::F32);
  for (const Shape s : {Shape{2, 70, 4, 2, 8}, Shape{1, 9, 2, 2, 4}}) {
    auto seg = segments(s.B, s.T);
    for (int with_seg = 0; with_seg < 2; ++with_seg)
      for (float p : {0.0f, 0.25f}) {
        const int32_t* sp = with_seg ? seg.data() : nullptr;
        auto qkv = randn(s.qkv(), 81);
        auto r = randn(s.out(), 82);
        std::vector<float> out(s.out()), lse(s.lse()), dqkv(s.qkv(), 77.0f);
        be->attention_forward(out.data(), lse.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 9, 3);
        be->attention_backward(dqkv.data(), r.data(), qkv.data(), out.data(), lse.data(), sp, s.B, s.T, s.NH, s.NKV,
                               s.HS, p, 9, 3);
        auto loss = [&] {
          std::vector<float> o(s.out()), l(s.lse());
          be->attention_forward(o.data(), l.data(), qkv.data(), sp, s.B, s.T, s.NH, s.NKV, s.HS, p, 9, 3);
          return dot(o, r);
        };
        INFO("T=" << s.T << " seg=" << with_seg << " p=" << p);
        check_gradient("dqkv", loss, qkv, dqkv, 120);
        // and the gradient of every Q, K and V column block is exercised: each block has a nonzero grad
        const int W = (s.NH + 2 * s.NKV) * s.HS;
        for (int col = 0; col < W; col += s.HS) {
          double n = 0;
          for (int i = 0; i < s.B * s.T; ++i) n += std::fabs(dqkv[static_cast<std::size_t>(i) * W + col]);
          REQUIRE(n > 0);
        }
      }
  }
}

TEST_CASE("GQA attention equals MHA with each KV head repeated over its query group") {
  auto be = make_backend("cpu", DType::F32);
  const int B = 2, T = 67, NH = 6, NKV = 2, HS = 8, rep = NH / NKV;
  const Shape g{B, T, NH, NKV, HS}, m{B, T, NH, NH, HS};
  auto qkv = randn(g.qkv(), 91);
  auto r = randn(g.out(), 92);
  std::vector<float> qkv_m(m.qkv());
  const int Wg = (NH + 2 * NKV) * HS, Wm = 3 * NH * HS;
  for (int i = 0; i < B * T; ++i) {
    for (int c = 0; c < NH * HS; ++c) qkv_m[i * Wm + c] = qkv[i * Wg + c];  // Q
    for (int h = 0; h < NH; ++h)
      for (int c = 0; c < HS; ++c) {
        qkv_m[i * Wm + (NH + h) * HS + c] = qkv[i * Wg + (NH + h / rep) * HS + c];            // K
        qkv_m[i * Wm + (2 * NH + h) * HS + c] = qkv[i * Wg + (NH + NKV + h / rep) * HS + c];  // V
      }
  }
  for (float p : {0.0f, 0.1f}) {
    std::vector<float> og(g.out()), lg(g.lse()), om(m.out()), lm(m.lse()), dg(g.qkv()), dm(m.qkv());
    be->attention_forward(og.data(), lg.data(), qkv.data(), nullptr, B, T, NH, NKV, HS, p, 1, 0);
    be->attention_forward(om.data(), lm.data(), qkv_m.data(), nullptr, B, T, NH, NH, HS, p, 1, 0);
    REQUIRE(max_abs_diff(og, om) < 1e-6);
    REQUIRE(max_abs_diff(lg, lm) < 1e-6);
    be->attention_backward(dg.data(), r.data(), qkv.data(), og.data(), lg.data(), nullptr, B, T, NH, NKV, HS, p, 1, 0);
    be->attention_backward(dm.data(), r.data(), qkv_m.data(), om.data(), lm.data(), nullptr, B, T, NH, NH, HS, p, 1, 0);
    for (int i = 0; i < B * T; ++i) {
      for (int c = 0; c < NH * HS; ++c) REQUIRE(dg[i * Wg + c] == Approx(dm[i * Wm + c]).margin(1e-5));
      for (int kv = 0; kv < NKV; ++kv)
        for (int c = 0; c < HS; ++c) {
          double dk = 0, dv = 0;
          for (int h = kv * rep; h < (kv + 1) * rep; ++h) {
            dk += dm[i * Wm + (NH + h) * HS + c];
            dv += dm[i * Wm + (2 * NH + h) * HS + c];
          }
          REQUIRE(dg[i * Wg + (NH + kv) * HS + c] == Approx(dk).margin(1e-5));
          REQUIRE(dg[i * Wg + (NH + NKV + kv) * HS + c] == Approx(dv).margin(1e-5));
        }
    }
  }
}

TEST_CASE("a TP rank's share of the heads (HeadSlice) computes those heads of the whole layer, dropout included") {
  // Dropout masks indexed by the rank's own heads made TP 2 drop other probabilities than one process.
  auto be = make_backend("cpu", DType::F32);
  const int B = 2, T = 37, NH = 4, NKV = 2, HS = 8, tp = 2, nh = NH / tp, nkv = NKV / tp;
  const float p = 0.2f;
  const Shape whole{B, T, NH, NKV, HS}, part{B, T, nh, nkv, HS};
  const int W = (NH + 2 * NKV) * HS;
  auto qkv = randn(whole.qkv(), 93);
  auto r = randn(whole.out(), 94);
  std::vector<float> out(whole.out()), lse(whole.lse()), dqkv(whole.qkv());
  be->attention_forward(out.data(), lse.data(), qkv.data(), nullptr, B, T, NH, NKV, HS, p, 11, 1 << 20);
  be->attention_backward(dqkv.data(), r.data(), qkv.data(), out.data(), lse.data(), nullptr, B, T, NH, NKV, HS, p, 11,
                         1 << 20);
  for (int rank = 0; rank < tp; ++rank) {
    // Column [first, first + n) blocks of HS of each row: the rank's Q heads, K groups, V groups.
    auto take = [&](const std::vector<float>& x, int width, int first, int n) {
      std::vector<float> y;
      for (int i = 0; i < B * T; ++i)
        for (int c = first * HS; c < (first + n) * HS; ++c) y.push_back(x[static_cast<std::size_t>(i) * width + c]);
      return y;
    };
    auto rank_qkv = [&](const std::vector<float>& x) {
      const auto q = take(x, W, rank * nh, nh), k = take(x, W, NH + rank * nkv, nkv),
                 v = take(x, W, NH + NKV + rank * nkv, nkv);
      std::vector<float> y;
      for (int i = 0; i < B * T; ++i)
        for (const auto* part_of : {&q, &k, &v}) {
          const std::size_t n = part_of->size() / (B * T);
          y.insert(y.end(), part_of->begin() + i * n, part_of->begin() + (i + 1) * n);
        }
      return y;
    };
    const auto q = rank_qkv(qkv);
    const auto rr = take(r, NH * HS, rank * nh, nh);
    std::vector<float> o(part.out()), l(part.lse()), dq(part.qkv());
    const HeadSlice heads{rank * nh, NH};
    be->attention_forward(o.data(), l.data(), q.data(), nullptr, B, T, nh, nkv, HS, p, 11, 1 << 20, heads);
    be->attention_backward(dq.data(), rr.data(), q.data(), o.data(), l.data(), nullptr, B, T, nh, nkv, HS, p, 11,
                           1 << 20, heads);
    INFO("rank " << rank);
    REQUIRE(max_abs_diff(o, take(out, NH * HS, rank * nh, nh)) < 1e-6);
    // dQ of the rank's heads; dK/dV of its groups (each group's query heads all live on the rank).
    REQUIRE(max_abs_diff(dq, rank_qkv(dqkv)) < 1e-5);
  }
  std::vector<float> o(part.out()), l(part.lse());
  REQUIRE_THROWS_WITH(
      be->attention_forward(o.data(), l.data(), qkv.data(), nullptr, B, T, nh, nkv, HS, p, 11, 0, HeadSlice{3, NH}),
      Catch::Contains("attention_forward: heads 3..4 of the call are outside the layer's 4 heads"));
}

TEST_CASE("attention rejects a head count that is not a multiple of the KV heads") {
  auto be = make_backend("cpu", DType::F32);
  std::vector<float> buf(1024), lse(64);
  REQUIRE_THROWS_WITH(be->attention_forward(buf.data(), lse.data(), buf.data(), nullptr, 1, 4, 3, 2, 4, 0.0f, 0, 0),
                      Catch::Contains("multiple"));
}
