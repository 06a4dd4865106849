// The per-head Q/K RMSNorm op (qk_norm_forward/backward, Megatron's --qk-layernorm) on the CPU twin:
// each Q and K head of a qkv row equals rmsnorm_forward of that head alone with the Q or K weight, V is
// untouched, and the input and weight gradients match finite differences (with GQA, so the K part has
// fewer heads than the Q part, and with zero-centred gamma).
#include "tests/unit/kernels/kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

constexpr int N = 3, NH = 4, NKV = 2, HS = 6;
constexpr int QKV = (NH + 2 * NKV) * HS;

}  // namespace

TEST_CASE("qk_norm_forward normalizes each Q and K head with its part's weight and leaves V as it is") {
  auto be = cpu_backend();
  const auto in = randn(std::size_t(N) * QKV, 301, 2.0f), qw = randn(HS, 302), kw = randn(HS, 303);
  std::vector<float> qkv = in, saved(std::size_t(N) * (NH + NKV) * HS), rstd(std::size_t(N) * (NH + NKV));
  be->qk_norm_forward(qkv.data(), saved.data(), rstd.data(), qw.data(), kw.data(), N, NH, NKV, HS, 1e-6f);
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < NH + 2 * NKV; ++j) {
      const std::size_t at = std::size_t(r) * QKV + std::size_t(j) * HS;
      std::vector<float> head(in.begin() + long(at), in.begin() + long(at + HS)), want(HS), got(HS), s(1);
      std::copy(qkv.begin() + long(at), qkv.begin() + long(at + HS), got.begin());
      if (j >= NH + NKV) {
        CHECK(same_bits(got, head));  // V
        continue;
      }
      be->rmsnorm_forward(want.data(), s.data(), head.data(), j < NH ? qw.data() : kw.data(), 1, HS, 1e-6f);
      CHECK(max_abs_diff(got, want) < 1e-6);
      CHECK(std::fabs(rstd[std::size_t(r) * (NH + NKV) + j] - s[0]) < 1e-6f);
    }
}

TEST_CASE("qk_norm: input and weight gradients by finite differences (GQA, also zero-centred gamma)") {
  auto be = cpu_backend();
  for (bool zc : {false, true}) {
    auto x = randn(std::size_t(N) * QKV, 311, 1.5f), qw = randn(HS, 312), kw = randn(HS, 313);
    const auto r_out = randn(std::size_t(N) * QKV, 314);
    std::vector<float> saved(std::size_t(N) * (NH + NKV) * HS), rstd(std::size_t(N) * (NH + NKV));
    auto loss = [&] {
      std::vector<float> y = x;
      be->qk_norm_forward(y.data(), saved.data(), rstd.data(), qw.data(), kw.data(), N, NH, NKV, HS, 1e-6f, zc);
      return dot(y, r_out);
    };
    std::vector<float> y = x;
    be->qk_norm_forward(y.data(), saved.data(), rstd.data(), qw.data(), kw.data(), N, NH, NKV, HS, 1e-6f, zc);
    std::vector<float> d = r_out, dqw(HS, 0.5f), dkw(HS, -0.5f);  // the weight gradients accumulate
    be->qk_norm_backward(d.data(), dqw.data(), dkw.data(), saved.data(), qw.data(), kw.data(), rstd.data(), N, NH, NKV,
                         HS, zc);
    for (float& v : dqw) v -= 0.5f;
    for (float& v : dkw) v += 0.5f;
    check_gradient("qk_norm dqkv", loss, x, d, 200);
    check_gradient("qk_norm dq_weight", loss, qw, dqw);
    check_gradient("qk_norm dk_weight", loss, kw, dkw);
  }
}

// Megatron's --qk-l2-norm: the op without weights is x * rsqrt(mean(x^2) + eps) per head (Megatron's L2Norm,
// written out in double here), V untouched, with the input gradient by finite differences; weights and their
// gradients are all given or all null.
TEST_CASE("qk_norm without weights (--qk-l2-norm): the formula in double and finite differences") {
  auto be = cpu_backend();
  const float eps = 1e-5f;
  auto x = randn(std::size_t(N) * QKV, 321, 1.5f);
  const auto r_out = randn(std::size_t(N) * QKV, 322);
  std::vector<float> saved(std::size_t(N) * (NH + NKV) * HS), rstd(std::size_t(N) * (NH + NKV));
  std::vector<float> y = x;
  be->qk_norm_forward(y.data(), saved.data(), rstd.data(), nullptr, nullptr, N, NH, NKV, HS, eps);
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < NH + 2 * NKV; ++j) {
      const std::size_t at = std::size_t(r) * QKV + std::size_t(j) * HS;
      double ms = 0;
      for (int c = 0; c < HS; ++c) ms += double(x[at + c]) * x[at + c] / HS;
      for (int c = 0; c < HS; ++c) {
        const double want = j < NH + NKV ? x[at + c] / std::sqrt(ms + eps) : x[at + c];
        CHECK(std::fabs(y[at + c] - want) < 1e-6);
      }
    }
  auto loss = [&] {
    std::vector<float> o = x;
    be->qk_norm_forward(o.data(), saved.data(), rstd.data(), nullptr, nullptr, N, NH, NKV, HS, eps);
    return dot(o, r_out);
  };
  y = x;
  be->qk_norm_forward(y.data(), saved.data(), rstd.data(), nullptr, nullptr, N, NH, NKV, HS, eps);
  std::vector<float> d = r_out;
  be->qk_norm_backward(d.data(), nullptr, nullptr, saved.data(), nullptr, nullptr, rstd.data(), N, NH, NKV, HS);
  check_gradient("qk_l2_norm dqkv", loss, x, d, 200);
  std::vector<float> w(HS, 1.0f);
  REQUIRE_THROWS_WITH(be->qk_norm_forward(y.data(), saved.data(), rstd.data(), w.data(), nullptr, N, NH, NKV, HS, eps),
                      Catch::Contains("both be given or both null"));
}
