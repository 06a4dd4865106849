// Zero-centred gamma (--apply-layernorm-1p) in the CPU norm twins: the weight w stores gamma - 1.
// Forward: a double-precision reference with gamma = 1 + w. Backward: finite differences w.r.t. the
// input, the stored w and the bias, and the same bits as the plain op given gamma = 1 + w (the fp32
// sum the kernels form). The residual-fused forwards equal add + the zero-centred norm.
#include <cmath>

#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

// One norm (LayerNorm with an optional bias, or RMSNorm) of (N, C) rows, statistics returned.
struct Norm {
  Backend& be;
  bool rms;
  const float* bias;
  int N, C;
  float eps = 1e-5f;
  void forward(std::vector<float>& out, std::vector<float>& mean, std::vector<float>& rstd, const std::vector<float>& x,
               const std::vector<float>& w, bool zc) const {
    if (rms)
      be.rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps, zc);
    else
      be.layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias, N, C, eps, zc);
  }
  void backward(std::vector<float>& dx, std::vector<float>& dw, float* db, const std::vector<float>& dy,
                const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& mean,
                const std::vector<float>& rstd, bool zc) const {
    if (rms)
      be.rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, zc);
    else
      be.layernorm_backward(dx.data(), dw.data(), db, dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C,
                            zc);
  }
};

void check_zero_centred(bool rms, bool with_bias) {
  INFO((rms ? "rmsnorm" : "layernorm") << (with_bias ? " with bias" : ""));
  auto be = cpu_backend();
  const int N = 6, C = 35;
  auto x = randn(N * C, 71, 2.0f), w = randn(C, 72, 0.3f), b = randn(C, 73), r = randn(N * C, 74);
  for (float& v : x) v += 1.25f;  // nonzero row means
  const Norm norm{*be, rms, with_bias ? b.data() : nullptr, N, C};

  // forward against doubles with gamma = 1 + w
  std::vector<float> out(N * C), mean(N), rstd(N), ref(N * C);
  norm.forward(out, mean, rstd, x, w, true);
  for (int i = 0; i < N; ++i) {
    double m = 0, v = 0;
    if (!rms) {
      for (int c = 0; c < C; ++c) m += x[i * C + c];
      m /= C;
    }
    for (int c = 0; c < C; ++c) v += (x[i * C + c] - m) * (x[i * C + c] - m);
    const double s = 1.0 / std::sqrt(v / C + norm.eps);
    for (int c = 0; c < C; ++c)
      ref[i * C + c] = float((x[i * C + c] - m) * s * (1.0 + double(w[c])) + (with_bias ? b[c] : 0.0));
  }
  REQUIRE(rel_err(out, ref) < 1e-5);

  // the same bits as the plain op handed gamma = 1 + w
  std::vector<float> gamma(C);
  for (int c = 0; c < C; ++c) gamma[c] = 1.0f + w[c];
  std::vector<float> pout(N * C), pmean(N), prstd(N);
  norm.forward(pout, pmean, prstd, x, gamma, false);
  REQUIRE(same_bits(out, pout));

  // backward: finite differences w.r.t. x, the stored w and the bias
  auto loss = [&] {
    std::vector<float> o(N * C), m(N), s(N);
    norm.forward(o, m, s, x, w, true);
    return dot(o, r);
  };
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  norm.backward(dx, dw, with_bias ? db.data() : nullptr, r, x, w, mean, rstd, true);
  check_gradient("zero-centred dinp", loss, x, dx);
  check_gradient("zero-centred dweight (stored w)", loss, w, dw);
  if (with_bias) check_gradient("zero-centred dbias", loss, b, db);

  // d/dw = d/dgamma: the plain backward at gamma gives the same bits
  std::vector<float> pdx(N * C, 0.0f), pdw(C, 0.0f), pdb(C, 0.0f);
  norm.backward(pdx, pdw, with_bias ? pdb.data() : nullptr, r, x, gamma, mean, rstd, false);
  REQUIRE(same_bits(dx, pdx));
  REQUIRE(same_bits(dw, pdw));
  REQUIRE(same_bits(db, pdb));
}

}  // namespace

TEST_CASE("zero-centred gamma norms: forward is the norm with gamma = 1 + w, gradients by finite differences") {
  check_zero_centred(false, true);
  check_zero_centred(false, false);
  check_zero_centred(true, false);
}

TEST_CASE("zero-centred gamma: the residual-fused forwards equal add + the zero-centred norm bit for bit") {
  auto be = cpu_backend();
  const int N = 300, C = 768;  // row-parallel
  const std::size_t NC = std::size_t(N) * C;
  auto a = randn(NC, 81, 2.0f), b = randn(NC, 82), w = randn(C, 83, 0.2f), bias = randn(C, 84);
  for (bool rms : {false, true}) {
    INFO((rms ? "rmsnorm" : "layernorm"));
    std::vector<float> res(NC), out(NC), mean(N), rstd(N), ures(NC), uout(NC), umean(N), urstd(N);
    be->add(ures.data(), a.data(), b.data(), NC);
    if (rms) {
      be->rmsnorm_forward(uout.data(), urstd.data(), ures.data(), w.data(), N, C, 1e-5f, true);
      be->residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N, C, 1e-5f,
                                   true);
    } else {
      be->layernorm_forward(uout.data(), umean.data(), urstd.data(), ures.data(), w.data(), bias.data(), N, C, 1e-5f,
                            true);
      be->residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                     bias.data(), N, C, 1e-5f, true);
      REQUIRE(same_bits(mean, umean));
    }
    REQUIRE(same_bits(res, ures));
    REQUIRE(same_bits(out, uout));
    REQUIRE(same_bits(rstd, urstd));
    // and differs from the plain norm of the same weights (the flag reaches the fused kernel)
    std::vector<float> pres(NC), pout(NC), pmean(N), prstd(N);
    if (rms)
      be->residual_rmsnorm_forward(pres.data(), pout.data(), prstd.data(), a.data(), b.data(), w.data(), N, C, 1e-5f);
    else
      be->residual_layernorm_forward(pres.data(), pout.data(), pmean.data(), prstd.data(), a.data(), b.data(), w.data(),
                                     bias.data(), N, C, 1e-5f);
    REQUIRE(max_abs_diff(pout, out) > 0.1);
  }
}
