// CPU twins of RoPE (partial, interleaved and half-split, Llama-3 frequency scaling), fused softmax + cross-entropy
// (also over two vocab shards) and fused AdamW (against a hand-computed step and a double-precision loop; with
// bf16-stored moments against the fp32 step rounded, and dumped for the numpy reference adamw_stored_ref.py).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>

#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"
#include "kernels/rope/rope_math.h"
#include "kernels/xent/xent_math.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

TEST_CASE("rope matches the GPT-J (interleaved) and NeoX/Llama (half-split) formulas, partial rotary") {
  auto be = cpu_backend();
  const int N = 11, NH = 3, NKV = 1, HS = 16, W = (NH + 2 * NKV) * HS;
  std::vector<int32_t> pos(N);
  for (int i = 0; i < N; ++i) pos[i] = (i * 37) % 101;
  for (int rd : {16, 8}) {
    for (bool inter : {false, true}) {
      auto x = randn(N * W, 151);
      auto y = x;
      be->rope(y.data(), pos.data(), N, NH, NKV, HS, rd, 10000.0f, inter, false);
      for (int i = 0; i < N; ++i)
        for (int h = 0; h < NH + 2 * NKV; ++h) {
          const float* a = &x[i * W + h * HS];
          const float* o = &y[i * W + h * HS];
          if (h >= NH + NKV) {  // V heads untouched
            for (int c = 0; c < HS; ++c) REQUIRE(o[c] == a[c]);
            continue;
          }
          for (int c = rd; c < HS; ++c) REQUIRE(o[c] == a[c]);  // beyond rotary_dim untouched
          for (int k = 0; k < rd / 2; ++k) {
            const double th = pos[i] * std::pow(10000.0, -2.0 * k / rd);
            const int d0 = inter ? 2 * k : k, d1 = inter ? 2 * k + 1 : k + rd / 2;
            REQUIRE(o[d0] == Approx(a[d0] * std::cos(th) - a[d1] * std::sin(th)).margin(2e-5));
            REQUIRE(o[d1] == Approx(a[d1] * std::cos(th) + a[d0] * std::sin(th)).margin(2e-5));
          }
        }
    }
  }
}

namespace {

RopeScaling llama3_scaling(double factor, double low, double high, int original) {
  RopeScaling s;
  s.llama3 = true;
  s.factor = factor;
  s.low_freq_factor = low;
  s.high_freq_factor = high;
  s.original_max_positions = original;
  return s;
}

RopeScaling linear_scaling(double factor) {
  RopeScaling s;
  s.seq_len_interpolation_factor = factor;
  return s;
}

RopeScaling yarn_scaling(double factor, int original, bool round_to_int, double mscale, double mscale_all_dim) {
  RopeScaling s;
  s.yarn = true;
  s.yarn_factor = factor;
  s.yarn_original_max_positions = original;
  s.yarn_round_to_int = round_to_int;
  s.yarn_mscale = mscale;
  s.yarn_mscale_all_dim = mscale_all_dim;
  return s;
}

}  // namespace

TEST_CASE("rope inverse undoes forward and is its backward (finite differences)") {
  auto be = cpu_backend();
  const int N = 6, NH = 4, NKV = 2, HS = 8, W = (NH + 2 * NKV) * HS;
  std::vector<int32_t> pos = {0, 1, 5, 17, 300, 2047};
  // Llama-3 scaling with original length 64: of the 3 pairs (wavelengths 6.3, 50, 395) one is kept,
  // one blended, one divided by the factor.
  // Linear interpolation by 2.5; YaRN (factor 4, original 64) rounded and not, with its default
  // concentration 0.1 ln 4 + 1 and with mscale / mscale_all_dim 0.7 / 0.3: forward is then m R, so the
  // transpose brings back m^2 x.
  for (RopeScaling scaling : {RopeScaling{}, llama3_scaling(8, 1, 4, 64), linear_scaling(2.5),
                              yarn_scaling(4, 64, true, 1.0, 0.0), yarn_scaling(4, 64, false, 0.7, 0.3)})
    for (bool inter : {false, true}) {
      auto x = randn(N * W, 161), r = randn(N * W, 162);
      auto y = x;
      be->rope(y.data(), pos.data(), N, NH, NKV, HS, 6, 500.0f, inter, false, scaling);
      REQUIRE(max_abs_diff(y, x) > 0.1);
      be->rope(y.data(), pos.data(), N, NH, NKV, HS, 6, 500.0f, inter, true, scaling);
      const float m = rope_concentration(scaling);
      auto m2x = x;  // the rotated dims of the Q and K heads scaled, V and dims >= rotary_dim kept
      for (int i = 0; i < N; ++i)
        for (int h = 0; h < NH + NKV; ++h)
          for (int c = 0; c < 6; ++c) m2x[std::size_t(i * W + h * HS + c)] *= m * m;
      REQUIRE(max_abs_diff(y, m2x) < 1e-5);
      auto dx = r;  // backward of rope = inverse rope applied to dout
      be->rope(dx.data(), pos.data(), N, NH, NKV, HS, 6, 500.0f, inter, true, scaling);
      auto loss = [&] {
        auto o = x;
        be->rope(o.data(), pos.data(), N, NH, NKV, HS, 6, 500.0f, inter, false, scaling);
        return dot(o, r);
      };
      check_gradient("rope", loss, x, dx, 200);
    }
  std::vector<float> buf(W);
  REQUIRE_THROWS_WITH(be->rope(buf.data(), pos.data(), 1, NH, NKV, HS, 7, 1e4f, false, false), Catch::Contains("even"));
  REQUIRE_THROWS_WITH(
      be->rope(buf.data(), pos.data(), 1, NH, NKV, HS, 8, 1e4f, false, false, llama3_scaling(8, 4, 4, 64)),
      Catch::Contains("low_freq_factor < high_freq_factor"));
}

// Hugging Face's llama3 rule written out in double: w = 2 pi / inv_freq, L = original length; w below
// L / high keeps inv_freq, w above L / low divides it by factor, between them a linear blend in L / w.
// The op's angle at position 1 is the scaled frequency itself, read back with atan2.
TEST_CASE("rope llama3 scaling: the CPU twin's frequencies follow Hugging Face's rule in all three bands") {
  auto be = cpu_backend();
  struct Case {
    int rd;
    float base;
    RopeScaling s;
  };
  // Llama-3.1 8B (head 128), Llama-3.2 1B's factor 32, and factors other than Meta's.
  const Case cases[] = {{128, 500000.0f, llama3_scaling(8, 1, 4, 8192)},
                        {64, 500000.0f, llama3_scaling(32, 1, 4, 8192)},
                        {16, 500000.0f, llama3_scaling(32, 1.5, 6, 60)}};
  for (const Case& k : cases) {
    const int NH = 1, NKV = 1, HS = k.rd, W = (NH + 2 * NKV) * HS, half = k.rd / 2;
    std::vector<float> x(W, 0.0f);
    for (int i = 0; i < half; ++i) x[i] = 1.0f;  // each half-split pair (i, i + half) starts at (1, 0)
    const std::vector<int32_t> pos = {1};
    be->rope(x.data(), pos.data(), 1, NH, NKV, HS, k.rd, k.base, false, false, k.s);
    const double L = k.s.original_max_positions, pi = 3.14159265358979323846;
    int kept = 0, divided = 0, blended = 0;
    for (int i = 0; i < half; ++i) {
      const double inv = std::pow(double(k.base), -2.0 * i / k.rd), w = 2 * pi / inv;
      double want;
      if (w < L / k.s.high_freq_factor) {
        want = inv;
        ++kept;
      } else if (w > L / k.s.low_freq_factor) {
        want = inv / k.s.factor;
        ++divided;
      } else {
        const double smooth = (L / w - k.s.low_freq_factor) / (k.s.high_freq_factor - k.s.low_freq_factor);
        want = (1 - smooth) * inv / k.s.factor + smooth * inv;
        ++blended;
      }
      const double got = std::atan2(double(x[i + half]), double(x[i]));
      INFO("rotary_dim " << k.rd << " pair " << i << " wavelength " << w);
      REQUIRE(got == Approx(want).epsilon(2e-6));
      REQUIRE(double(rope_inv_freq(i, k.rd, k.base, k.s)) == Approx(want).epsilon(2e-6));
    }
    REQUIRE(kept > 0);
    REQUIRE(divided > 0);
    REQUIRE(blended > 0);
  }
}

// YaRN as the paper and Megatron define it, written out in double: correction dim of r rotations over the
// original length L is d ln(L / (2 pi r)) / (2 ln base); pairs below the beta_fast dim keep inv_freq, above the
// beta_slow dim take inv_freq / factor, between a linear ramp; cos and sin are scaled by 0.1 ln factor + 1.
// Linear interpolation: the angle at position p is p / factor * inv_freq. Read back at one position with atan2
// (angle) and the pair's length (the concentration).
TEST_CASE("rope linear interpolation and YaRN: angles and concentration follow the formulas in double") {
  auto be = cpu_backend();
  const double pi = 3.14159265358979323846;
  const int rd = 32, NH = 1, NKV = 1, HS = rd, W = (NH + 2 * NKV) * HS, half = rd / 2;
  const float base = 10000.0f;
  for (bool round_to_int : {true, false})
    for (const RopeScaling& s : {linear_scaling(4.0), yarn_scaling(8, 64, round_to_int, 1.0, 0.0)}) {
      std::vector<float> x(W, 0.0f);
      for (int i = 0; i < half; ++i) x[i] = 1.0f;
      const int p = 3;
      const std::vector<int32_t> pos = {p};
      be->rope(x.data(), pos.data(), 1, NH, NKV, HS, rd, base, false, false, s);
      auto dim_of = [&](double rot) {
        return rd * std::log(s.yarn_original_max_positions / (2 * pi * rot)) / (2 * std::log(double(base)));
      };
      double low = dim_of(32), high = dim_of(1);
      if (round_to_int) low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0), high = std::min(high, rd - 1.0);
      int kept = 0, divided = 0, blended = 0;
      for (int i = 0; i < half; ++i) {
        const double inv = std::pow(double(base), -2.0 * i / rd);
        double want = p * inv / s.seq_len_interpolation_factor, m = 1.0;
        if (s.yarn) {
          const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
          want = p * (inv / s.yarn_factor * ramp + inv * (1 - ramp));
          m = 0.1 * std::log(s.yarn_factor) + 1;
          (ramp == 0 ? kept : ramp == 1 ? divided : blended) += 1;
        }
        const double got = std::atan2(double(x[i + half]), double(x[i]));
        INFO("yarn " << s.yarn << " round " << round_to_int << " pair " << i);
        REQUIRE(got == Approx(want).epsilon(2e-6).margin(1e-7));
        REQUIRE(std::hypot(double(x[i]), double(x[i + half])) == Approx(m).epsilon(1e-6));
      }
      if (s.yarn) REQUIRE((kept > 0 && divided > 0 && blended > 0));
    }
}

namespace {

struct XentCase {
  int N = 6, V = 24, V_valid = 21;
  std::vector<float> logits;
  std::vector<int32_t> targets = {0, 20, 7, 13, 5, 11};
  std::vector<float> dloss = {0.5f, 1.0f, 0.0f, 2.0f, 0.25f, 1.0f};  // row 2 masked
  XentCase() : logits(randn(static_cast<std::size_t>(N) * V, 171, 3.0f)) {}
};

struct Stats {
  std::vector<float> max, sum, tgt;
  explicit Stats(int N) : max(N), sum(N), tgt(N) {}
  XentStats view() { return XentStats{max.data(), sum.data(), tgt.data()}; }
};

}  // namespace

TEST_CASE("xent stats and loss match a log-softmax in double, padding columns are ignored") {
  auto be = cpu_backend();
  XentCase c;
  Stats st(c.N);
  be->xent_stats(st.view(), c.logits.data(), c.targets.data(), c.N, c.V, c.V_valid, 0);
  std::vector<float> loss(c.N);
  be->xent_loss(loss.data(), st.view(), c.N);
  for (int i = 0; i < c.N; ++i) {
    double m = -INFINITY, s = 0;
    for (int v = 0; v < c.V_valid; ++v) m = std::fmax(m, c.logits[i * c.V + v]);
    for (int v = 0; v < c.V_valid; ++v) s += std::exp(c.logits[i * c.V + v] - m);
    REQUIRE(loss[i] == Approx(std::log(s) + m - c.logits[i * c.V + c.targets[i]]).epsilon(1e-6));
  }
  // a huge logit in a padding column changes nothing
  auto padded = c.logits;
  padded[1 * c.V + 22] = 1000.0f;
  Stats st2(c.N);
  be->xent_stats(st2.view(), padded.data(), c.targets.data(), c.N, c.V, c.V_valid, 0);
  REQUIRE(st2.max == st.max);
  REQUIRE(st2.sum == st.sum);
}

TEST_CASE("xent backward: finite differences of sum(dloss * loss), zero on padding and masked rows") {
  auto be = cpu_backend();
  XentCase c;
  Stats st(c.N);
  be->xent_stats(st.view(), c.logits.data(), c.targets.data(), c.N, c.V, c.V_valid, 0);
  std::vector<float> d(c.logits.size(), 5.0f);
  be->xent_backward(d.data(), c.logits.data(), c.targets.data(), st.max.data(), st.sum.data(), c.dloss.data(), c.N, c.V,
                    c.V_valid, 0);
  for (int i = 0; i < c.N; ++i)
    for (int v = c.V_valid; v < c.V; ++v) REQUIRE(d[i * c.V + v] == 0.0f);
  for (int v = 0; v < c.V; ++v) REQUIRE(d[2 * c.V + v] == 0.0f);
  auto loss = [&] {
    Stats s(c.N);
    be->xent_stats(s.view(), c.logits.data(), c.targets.data(), c.N, c.V, c.V_valid, 0);
    std::vector<float> l(c.N);
    be->xent_loss(l.data(), s.view(), c.N);
    double t = 0;
    for (int i = 0; i < c.N; ++i) t += static_cast<double>(c.dloss[i]) * l[i];
    return t;
  };
  check_gradient("dlogits", loss, c.logits, d, 144, 1e-2f);
  // in place (dlogits aliases logits)
  auto inplace = c.logits;
  be->xent_backward(inplace.data(), inplace.data(), c.targets.data(), st.max.data(), st.sum.data(), c.dloss.data(), c.N,
                    c.V, c.V_valid, 0);
  REQUIRE(inplace == d);
}

TEST_CASE("xent over two vocab shards, merged, equals the unsharded loss and gradient") {
  auto be = cpu_backend();
  XentCase c;
  const int V0 = 12, V1 = c.V - V0, valid1 = c.V_valid - V0;  // shard 1 holds the padding
  std::vector<float> l0(c.N * V0), l1(c.N * V1);
  for (int i = 0; i < c.N; ++i) {
    for (int v = 0; v < V0; ++v) l0[i * V0 + v] = c.logits[i * c.V + v];
    for (int v = 0; v < V1; ++v) l1[i * V1 + v] = c.logits[i * c.V + V0 + v];
  }
  Stats full(c.N), s0(c.N), s1(c.N);
  be->xent_stats(full.view(), c.logits.data(), c.targets.data(), c.N, c.V, c.V_valid, 0);
  be->xent_stats(s0.view(), l0.data(), c.targets.data(), c.N, V0, V0, 0);
  be->xent_stats(s1.view(), l1.data(), c.targets.data(), c.N, V1, valid1, V0);
  for (int i = 0; i < c.N; ++i) {
    xent_merge(&s0.max[i], &s0.sum[i], s1.max[i], s1.sum[i]);
    s0.tgt[i] += s1.tgt[i];  // exactly one shard holds the target
  }
  std::vector<float> lf(c.N), ls(c.N);
  be->xent_loss(lf.data(), full.view(), c.N);
  be->xent_loss(ls.data(), s0.view(), c.N);
  for (int i = 0; i < c.N; ++i) REQUIRE(ls[i] == Approx(lf[i]).epsilon(1e-6));
  std::vector<float> df(c.logits.size()), d0(l0.size()), d1(l1.size());
  be->xent_backward(df.data(), c.logits.data(), c.targets.data(), full.max.data(), full.sum.data(), c.dloss.data(), c.N,
                    c.V, c.V_valid, 0);
  be->xent_backward(d0.data(), l0.data(), c.targets.data(), s0.max.data(), s0.sum.data(), c.dloss.data(), c.N, V0, V0,
                    0);
  be->xent_backward(d1.data(), l1.data(), c.targets.data(), s0.max.data(), s0.sum.data(), c.dloss.data(), c.N, V1,
                    valid1, V0);
  for (int i = 0; i < c.N; ++i) {
    for (int v = 0; v < V0; ++v) REQUIRE(d0[i * V0 + v] == Approx(df[i * c.V + v]).margin(1e-7));
    for (int v = 0; v < V1; ++v) REQUIRE(d1[i * V1 + v] == Approx(df[i * c.V + V0 + v]).margin(1e-7));
  }
}

TEST_CASE("adamw: a hand-computed first step, then three steps against a double-precision loop") {
  auto be = cpu_backend();
  {
    float p = 1.0f, m = 0.0f, v = 0.0f, model = 0.0f;
    const float g = 0.5f;
    be->adamw_update(&p, &model, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1.0f);
    // m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25: p = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1)
    REQUIRE(m == Approx(0.05).epsilon(1e-6));
    REQUIRE(v == Approx(0.00025).epsilon(2e-5));  // 1 - 0.999f is 0.00099998713
    REQUIRE(p == Approx(1.0 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01)).epsilon(1e-7));
    REQUIRE(model == p);
  }
  const std::size_t n = 50000;
  auto p = randn(n, 181), g0 = randn(n, 182);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  std::vector<double> rp(p.begin(), p.end()), rm(n, 0.0), rv(n, 0.0);
  const double lr = 3e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, scale = 0.5;
  for (int step = 1; step <= 3; ++step) {
    auto g = randn(n, 190 + step);
    be->adamw_update(p.data(), nullptr, g.data(), m.data(), v.data(), n, static_cast<float>(lr), static_cast<float>(b1),
                     static_cast<float>(b2), static_cast<float>(eps), static_cast<float>(wd), step,
                     static_cast<float>(scale));
    for (std::size_t i = 0; i < n; ++i) {
      const double gg = g[i] * scale;
      rm[i] = b1 * rm[i] + (1 - b1) * gg;
      rv[i] = b2 * rv[i] + (1 - b2) * gg * gg;
      const double mh = rm[i] / (1 - std::pow(b1, step)), vh = rv[i] / (1 - std::pow(b2, step));
      rp[i] -= lr * (mh / (std::sqrt(vh) + eps) + wd * rp[i]);
    }
  }
  std::vector<float> rpf(rp.begin(), rp.end());
  REQUIRE(max_abs_diff(p, rpf) < 1e-6);
  REQUIRE(rel_err(m, std::vector<float>(rm.begin(), rm.end())) < 1e-6);
  REQUIRE_THROWS_WITH(
      be->adamw_update(p.data(), nullptr, g0.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 0, 1.0f),
      Catch::Contains("step"));
}

namespace {

// Moments for the stored-state tests: a spread of magnitudes (rounding to bf16 bites at each), v >= 0.
struct StoredAdamCase {
  std::vector<float> p, m, v;
  std::vector<std::vector<float>> g;  // one gradient per step
};

StoredAdamCase stored_adam_case(std::size_t n) {
  StoredAdamCase c;
  c.p = randn(n, 301);
  c.m = randn(n, 302);
  c.v = randn(n, 303);
  for (std::size_t i = 0; i < n; ++i) {
    const float mag = std::ldexp(1.0f, int(i % 23) - 14);
    c.m[i] *= mag;
    c.v[i] = c.v[i] * c.v[i] * mag * mag;
  }
  for (int s = 0; s < 3; ++s) {
    auto g = randn(n, 310 + s);
    for (std::size_t i = 0; i < n; ++i) g[i] *= std::ldexp(1.0f, int((i * 7) % 19) - 10);
    c.g.push_back(g);
  }
  return c;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = f32_to_bf16(x[i]);
  return h;
}

// Three steps of adamw_update_stored from the case (moments narrowed first where stored as bf16); each
// moment's final state widened back to fp32 in m_out / v_out.
void run_stored_adam(Backend& be, const StoredAdamCase& c, DType md, DType vd, int first_step, std::vector<float>& p,
                     std::vector<float>& m_out, std::vector<float>& v_out) {
  const std::size_t n = c.p.size();
  p = c.p;
  std::vector<float> m = c.m, v = c.v;
  std::vector<uint16_t> mh = to_bf16_bits(c.m), vh = to_bf16_bits(c.v);
  void* mp = md == DType::BF16 ? static_cast<void*>(mh.data()) : m.data();
  void* vp = vd == DType::BF16 ? static_cast<void*>(vh.data()) : v.data();
  for (int s = 0; s < 3; ++s)
    be.adamw_update_stored(p.data(), nullptr, c.g[s].data(), {mp, md, vp, vd}, n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
                           first_step + s, 0.5f);
  m_out.resize(n);
  v_out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    m_out[i] = md == DType::BF16 ? bf16_to_f32(mh[i]) : m[i];
    v_out[i] = vd == DType::BF16 ? bf16_to_f32(vh[i]) : v[i];
  }
}

}  // namespace

TEST_CASE("adamw with stored moments: fp32 storage is adamw_update bit for bit, bf16 is each fp32 step rounded") {
  auto be = cpu_backend();
  const std::size_t n = 4099;
  const StoredAdamCase c = stored_adam_case(n);
  // fp32 storage: the plain op's bits.
  std::vector<float> p, m, v;
  run_stored_adam(*be, c, DType::F32, DType::F32, 5, p, m, v);
  std::vector<float> rp = c.p, rm = c.m, rv = c.v;
  for (int s = 0; s < 3; ++s)
    be->adamw_update(rp.data(), nullptr, c.g[s].data(), rm.data(), rv.data(), n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 5 + s,
                     0.5f);
  REQUIRE(std::memcmp(p.data(), rp.data(), n * 4) == 0);
  REQUIRE(std::memcmp(m.data(), rm.data(), n * 4) == 0);
  REQUIRE(std::memcmp(v.data(), rv.data(), n * 4) == 0);
  // bf16 storage: one fp32 step at a time from the widened state, each moment rounded to nearest even.
  for (const auto& [md, vd] :
       {std::pair{DType::BF16, DType::BF16}, {DType::BF16, DType::F32}, {DType::F32, DType::BF16}}) {
    run_stored_adam(*be, c, md, vd, 1, p, m, v);
    rp = c.p;
    rm = c.m;
    rv = c.v;
    auto round_state = [&](std::vector<float>& x, DType d) {
      if (d == DType::BF16)
        for (float& e : x) e = bf16_to_f32(f32_to_bf16(e));
    };
    round_state(rm, md);
    round_state(rv, vd);
    for (int s = 0; s < 3; ++s) {
      be->adamw_update(rp.data(), nullptr, c.g[s].data(), rm.data(), rv.data(), n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
                       1 + s, 0.5f);
      round_state(rm, md);
      round_state(rv, vd);
    }
    REQUIRE(std::memcmp(p.data(), rp.data(), n * 4) == 0);
    REQUIRE(std::memcmp(m.data(), rm.data(), n * 4) == 0);
    REQUIRE(std::memcmp(v.data(), rv.data(), n * 4) == 0);
    REQUIRE(max_abs_diff(m, std::vector<float>(c.m)) > 0.0f);  // the state moved
  }
  std::vector<uint16_t> h(n);
  REQUIRE_THROWS_WITH(
      be->adamw_update_stored(p.data(), nullptr, c.g[0].data(), {h.data(), DType::F16, v.data(), DType::F32}, n, 1e-3f,
                              0.9f, 0.95f, 1e-8f, 0.0f, 1, 1.0f),
      Catch::Contains("only fp32 or bf16"));
}

// Not run by default: with GPTRAIN_ADAMW_DUMP=DIR writes the case and the kernel's results for
// tests/python/adamw_stored_ref.py (numpy), which recomputes the steps and compares bit for bit.
TEST_CASE("adamw stored moments: dump for the numpy reference", "[.adamw_dump]") {
  const char* dir = std::getenv("GPTRAIN_ADAMW_DUMP");
  REQUIRE(dir != nullptr);
  auto be = cpu_backend();
  const std::size_t n = 4099;
  const StoredAdamCase c = stored_adam_case(n);
  auto write = [&](const std::string& name, const void* data, std::size_t bytes) {
    std::FILE* f = std::fopen((std::string(dir) + "/" + name).c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(data, 1, bytes, f) == bytes);
    std::fclose(f);
  };
  write("p0.f32", c.p.data(), n * 4);
  write("m0.f32", c.m.data(), n * 4);
  write("v0.f32", c.v.data(), n * 4);
  for (int s = 0; s < 3; ++s) {
    char name[16];
    std::snprintf(name, sizeof name, "g%d.f32", s);
    write(name, c.g[s].data(), n * 4);
  }
  for (const auto& [md, vd, tag] : {std::tuple{DType::BF16, DType::BF16, "bf16_bf16"},
                                    {DType::BF16, DType::F32, "bf16_fp32"},
                                    {DType::F32, DType::BF16, "fp32_bf16"}}) {
    std::vector<float> p, m, v;
    run_stored_adam(*be, c, md, vd, 1, p, m, v);
    write(std::string("p_") + tag + ".f32", p.data(), n * 4);
    write(std::string("m_") + tag + ".f32", m.data(), n * 4);
    write(std::string("v_") + tag + ".f32", v.data(), n * 4);
  }
}
