// CPU twins of the fused ops (kernels/backend.h): residual add + LayerNorm/RMSNorm and linear + GELU.
// Each equals its unfused op sequence bit for bit, and its gradients (through the backward recipe the
// interface documents) pass finite differences.

#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

// residual_*_forward on (a, b) against add() + *_forward().
void check_residual_norm_equals_unfused(bool rms, bool with_bias, int N, int C, bool in_place) {
  auto be = cpu_backend();
  const std::size_t NC = std::size_t(N) * C;
  auto a = randn(NC, 101, 2.0f), b = randn(NC, 102), w = randn(C, 103), bias = randn(C, 104);
  for (float& v : a) v += 1.5f;  // nonzero row means
  const float* bp = with_bias ? bias.data() : nullptr;
  std::vector<float> res(NC), out(NC), mean(N), rstd(N), ures(NC), uout(NC), umean(N), urstd(N);
  be->add(ures.data(), a.data(), b.data(), NC);
  if (rms)
    be->rmsnorm_forward(uout.data(), urstd.data(), ures.data(), w.data(), N, C, 1e-5f);
  else
    be->layernorm_forward(uout.data(), umean.data(), urstd.data(), ures.data(), w.data(), bp, N, C, 1e-5f);
  if (in_place) res = a;  // residual_out aliases a: the in-place update of the residual stream
  const float* a_in = in_place ? res.data() : a.data();
  if (rms)
    be->residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a_in, b.data(), w.data(), N, C, 1e-5f);
  else
    be->residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a_in, b.data(), w.data(), bp, N, C,
                                   1e-5f);
  INFO("rms " << rms << " bias " << with_bias << " N " << N << " C " << C << " in place " << in_place);
  REQUIRE(same_bits(res, ures));
  REQUIRE(same_bits(out, uout));
  REQUIRE(same_bits(rstd, urstd));
  if (!rms) REQUIRE(same_bits(mean, umean));
}

}  // namespace

TEST_CASE("residual layernorm / rmsnorm forward equal add + norm bit for bit (also in place, threaded)") {
  for (bool rms : {false, true})
    for (bool with_bias : {true, false}) {
      if (rms && with_bias) continue;
      for (bool in_place : {false, true}) {
        check_residual_norm_equals_unfused(rms, with_bias, 7, 37, in_place);
        check_residual_norm_equals_unfused(rms, with_bias, 300, 768, in_place);  // row-parallel
      }
    }
}

TEST_CASE(
    "residual layernorm: gradients of both outputs by finite differences (backward = layernorm_backward "
    "accumulating onto the residual gradient)") {
  auto be = cpu_backend();
  const int N = 5, C = 19;
  const std::size_t NC = std::size_t(N) * C;
  auto a = randn(NC, 111, 1.5f), b = randn(NC, 112), w = randn(C, 113), bias = randn(C, 114);
  auto r_res = randn(NC, 115), r_norm = randn(NC, 116);  // loss = <residual_out, r_res> + <norm_out, r_norm>
  for (float& v : a) v += 0.8f;
  auto loss = [&] {
    std::vector<float> res(NC), out(NC), m(N), s(N);
    be->residual_layernorm_forward(res.data(), out.data(), m.data(), s.data(), a.data(), b.data(), w.data(),
                                   bias.data(), N, C, 1e-5f);
    return dot(res, r_res) + dot(out, r_norm);
  };
  std::vector<float> res(NC), out(NC), mean(N), rstd(N);
  be->residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                 bias.data(), N, C, 1e-5f);
  // the residual-stream gradient arrives as r_res; the norm's backward accumulates onto it
  std::vector<float> dres = r_res, dw(C, 0.0f), db(C, 0.0f);
  be->layernorm_backward(dres.data(), dw.data(), db.data(), r_norm.data(), res.data(), w.data(), mean.data(),
                         rstd.data(), N, C);
  check_gradient("residual layernorm da", loss, a, dres);
  check_gradient("residual layernorm db", loss, b, dres);
  check_gradient("residual layernorm dweight", loss, w, dw);
  check_gradient("residual layernorm dbias", loss, bias, db);
}

TEST_CASE("residual rmsnorm: gradients of both outputs by finite differences") {
  auto be = cpu_backend();
  const int N = 4, C = 23;
  const std::size_t NC = std::size_t(N) * C;
  auto a = randn(NC, 121, 1.5f), b = randn(NC, 122), w = randn(C, 123);
  auto r_res = randn(NC, 124), r_norm = randn(NC, 125);
  auto loss = [&] {
    std::vector<float> res(NC), out(NC), s(N);
    be->residual_rmsnorm_forward(res.data(), out.data(), s.data(), a.data(), b.data(), w.data(), N, C, 1e-6f);
    return dot(res, r_res) + dot(out, r_norm);
  };
  std::vector<float> res(NC), out(NC), rstd(N);
  be->residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N, C, 1e-6f);
  std::vector<float> dres = r_res, dw(C, 0.0f);
  be->rmsnorm_backward(dres.data(), dw.data(), r_norm.data(), res.data(), w.data(), rstd.data(), N, C);
  check_gradient("residual rmsnorm da", loss, a, dres);
  check_gradient("residual rmsnorm db", loss, b, dres);
  check_gradient("residual rmsnorm dweight", loss, w, dw);
}

TEST_CASE("residual norm rejects norm_out aliasing an input") {
  auto be = cpu_backend();
  std::vector<float> x(12, 1.0f), y(12, 2.0f), w(4, 1.0f), m(3), s(3);
  REQUIRE_THROWS(be->residual_layernorm_forward(x.data(), x.data(), m.data(), s.data(), x.data(), y.data(), w.data(),
                                                nullptr, 3, 4, 1e-5f));
  REQUIRE_THROWS(be->residual_rmsnorm_forward(x.data(), y.data(), s.data(), x.data(), y.data(), w.data(), 3, 4, 1e-5f));
}

TEST_CASE("matmul_bias_gelu_forward / matmul_dgelu_backward equal the unfused ops bit for bit") {
  auto be = cpu_backend();
  for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf})
    for (bool with_bias : {true, false})
      for (auto [N, IC, OC] : {std::tuple{6, 5, 9}, std::tuple{260, 64, 256}}) {
        INFO("kind " << int(kind) << " bias " << with_bias << " N " << N << " IC " << IC << " OC " << OC);
        const std::size_t NO = std::size_t(N) * OC;
        auto x = randn(std::size_t(N) * IC, 131), w1 = randn(std::size_t(OC) * IC, 132, 0.3f), b1 = randn(OC, 133);
        const float* bp = with_bias ? b1.data() : nullptr;
        std::vector<float> out(NO), pre(NO), uout(NO), upre(NO);
        be->matmul_bias_gelu_forward(out.data(), pre.data(), x.data(), w1.data(), bp, N, IC, OC, kind);
        be->matmul_forward(upre.data(), x.data(), w1.data(), bp, N, IC, OC);
        be->gelu_forward(uout.data(), upre.data(), NO, kind);
        REQUIRE(same_bits(pre, upre));
        REQUIRE(same_bits(out, uout));
        // backward of a second linear (OC2, OC) that reads out: into d(pre)
        const int OC2 = 7;
        auto w2 = randn(std::size_t(OC2) * OC, 134, 0.3f), dy = randn(std::size_t(N) * OC2, 135);
        std::vector<float> dpre(NO, 5.0f), dw(std::size_t(OC2) * OC, 0.5f), db(OC2, 0.25f);
        std::vector<float> udpre(NO), udw = dw, udb = db;
        be->matmul_dgelu_backward(dpre.data(), dw.data(), with_bias ? db.data() : nullptr, dy.data(), out.data(),
                                  pre.data(), w2.data(), N, OC, OC2, kind);
        be->matmul_backward(udpre.data(), udw.data(), with_bias ? udb.data() : nullptr, dy.data(), out.data(),
                            w2.data(), N, OC, OC2, false);
        be->gelu_backward(udpre.data(), pre.data(), udpre.data(), NO, kind);
        REQUIRE(same_bits(dpre, udpre));
        REQUIRE(same_bits(dw, udw));
        REQUIRE(same_bits(db, udb));
      }
}

TEST_CASE("linear + GELU + linear: gradients through the fused ops by finite differences") {
  auto be = cpu_backend();
  const int N = 4, IC = 5, F = 6, OC = 3;
  for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf}) {
    INFO("kind " << int(kind));
    auto x = randn(std::size_t(N) * IC, 141), w1 = randn(std::size_t(F) * IC, 142, 0.6f), b1 = randn(F, 143);
    auto w2 = randn(std::size_t(OC) * F, 144), b2 = randn(OC, 145), r = randn(std::size_t(N) * OC, 146);
    // y = gelu(x W1^T + b1) W2^T + b2, loss = <y, r>
    auto forward = [&](std::vector<float>& act, std::vector<float>& pre) {
      std::vector<float> y(std::size_t(N) * OC);
      be->matmul_bias_gelu_forward(act.data(), pre.data(), x.data(), w1.data(), b1.data(), N, IC, F, kind);
      be->matmul_forward(y.data(), act.data(), w2.data(), b2.data(), N, F, OC);
      return y;
    };
    auto loss = [&] {
      std::vector<float> act(std::size_t(N) * F), pre(act.size());
      return dot(forward(act, pre), r);
    };
    std::vector<float> act(std::size_t(N) * F), pre(act.size());
    forward(act, pre);
    std::vector<float> dpre(act.size()), dw2(w2.size(), 0.0f), db2(OC, 0.0f), dx(x.size()), dw1(w1.size(), 0.0f),
        db1(F, 0.0f);
    be->matmul_dgelu_backward(dpre.data(), dw2.data(), db2.data(), r.data(), act.data(), pre.data(), w2.data(), N, F,
                              OC, kind);
    be->matmul_backward(dx.data(), dw1.data(), db1.data(), dpre.data(), x.data(), w1.data(), N, IC, F, false);
    check_gradient("dx", loss, x, dx);
    check_gradient("dw1", loss, w1, dw1);
    check_gradient("db1", loss, b1, db1);
    check_gradient("dw2", loss, w2, dw2);
    check_gradient("db2", loss, b2, db2);
  }
}
