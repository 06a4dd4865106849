// GPU vs CPU twin for the optimizer ops besides AdamW: fused SGD with momentum, Muon's element-wise steps
// (momentum in both torch lerp branches, with and without Nesterov; the weight update; the bf16-rounding
// normalization) and the fp32 GEMM and 2-D copy of its Newton-Schulz iteration and tensor-parallel gathers.
// Tolerances: the element-wise steps are a few fp32 multiply-adds, which nvcc contracts into FMAs and the
// CPU twin rounds twice: a few ulp after three steps, so 1e-6 relative (an operand or coefficient out of
// place is off by far more). A division and a bf16 rounding are correctly rounded on both: bit for bit.
// gemm_f32 promises fp32 products (no TF32): 1e-5 relative passes fp32 summation-order differences and fails
// TF32's 10-bit mantissa (~1e-3).
#include <cmath>
#include <cstring>

#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

// The model copy is the updated master rounded to the compute dtype, in the same pass.
void check_model_copy(Backend& g, DType t, const Buf& model, const std::vector<float>& master) {
  const std::vector<float> copy = download(g, t, model.get(), master.size());
  for (std::size_t i = 0; i < master.size(); ++i) {
    INFO("dtype " << dtype_name(t) << " element " << i);
    REQUIRE(copy[i] == round_to(t, master[i]));
  }
}

}  // namespace

TEST_CASE("gpu fused sgd with momentum vs cpu, model copy in the compute dtype", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const std::size_t n = 100003;  // not a multiple of the block or of a 16-byte vector
    const std::vector<float> p = randn(n, 91), grad = randn(n, 92, 0.01f), buf = randn(n, 93, 0.003f);
    Buf cp = upload_f32(c, p), cg = upload_f32(c, grad), cb = upload_f32(c, buf), cmodel(c, n * 4);
    Buf gp = upload_f32(g, p), gg = upload_f32(g, grad), gb = upload_f32(g, buf), gmodel(g, n * dtype_size(t));
    for (int step = 1; step <= 3; ++step) {
      // the last step without the model copy (nullable)
      c.sgd_update(cp.f(), step < 3 ? cmodel.get() : nullptr, cg.f(), cb.f(), n, 0.05f, 0.9f, 0.01f, 0.5f);
      g.sgd_update(gp.f(), step < 3 ? gmodel.get() : nullptr, gg.f(), gb.f(), n, 0.05f, 0.9f, 0.01f, 0.5f);
      if (step == 2) check_model_copy(g, t, gmodel, download_f32(g, gp, n));
    }
    GPTRAIN_CHECK_CLOSE("sgd master " << dtype_name(t), download_f32(g, gp, n), download_f32(c, cp, n), 1e-6);
    GPTRAIN_CHECK_CLOSE("sgd momentum buffer " << dtype_name(t), download_f32(g, gb, n), download_f32(c, cb, n), 1e-6);
  }
}

TEST_CASE("gpu muon momentum (both lerp branches, nesterov or not) and weight update vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const std::size_t n = 65537;
  const std::vector<float> grad = randn(n, 101, 0.02f), buf0 = randn(n, 102, 0.01f);
  // momentum 0.95: lerp weight 0.05 (a + w (b - a)); momentum 0.3: weight 0.7 (b - (b - a)(1 - w)).
  for (float momentum : {0.95f, 0.3f})
    for (bool nesterov : {false, true}) {
      INFO("momentum " << momentum << " nesterov " << nesterov);
      Twins tw(DType::F32);
      Backend& c = *tw.cpu;
      Backend& g = *tw.gpu;
      Buf cb = upload_f32(c, buf0), cg = upload_f32(c, grad), cu(c, n * 4);
      Buf gb = upload_f32(g, buf0), gg = upload_f32(g, grad), gu(g, n * 4);
      for (int step = 0; step < 3; ++step) {
        c.muon_momentum(cb.f(), cu.f(), cg.f(), n, 0.25f, momentum, nesterov);
        g.muon_momentum(gb.f(), gu.f(), gg.f(), n, 0.25f, momentum, nesterov);
      }
      GPTRAIN_CHECK_CLOSE("muon momentum buffer", download_f32(g, gb, n), download_f32(c, cb, n), 1e-6);
      GPTRAIN_CHECK_CLOSE("muon u", download_f32(g, gu, n), download_f32(c, cu, n), 1e-6);
    }
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const std::vector<float> p = randn(n, 103), o = randn(n, 104, 0.05f);
    Buf cp = upload_f32(c, p), co = upload_f32(c, o), cmodel(c, n * 4);
    Buf gp = upload_f32(g, p), go = upload_f32(g, o), gmodel(g, n * dtype_size(t));
    for (int step = 1; step <= 3; ++step) {
      c.muon_apply(cp.f(), step < 3 ? cmodel.get() : nullptr, co.f(), n, 0.02f, 0.1f, 1.7f, 0.2f);
      g.muon_apply(gp.f(), step < 3 ? gmodel.get() : nullptr, go.f(), n, 0.02f, 0.1f, 1.7f, 0.2f);
      if (step == 2) check_model_copy(g, t, gmodel, download_f32(g, gp, n));
    }
    GPTRAIN_CHECK_CLOSE("muon_apply master " << dtype_name(t), download_f32(g, gp, n), download_f32(c, cp, n), 1e-6);
  }
}

TEST_CASE("gpu muon_scale_round: x / divisor, bf16-rounded or not, the cpu twin's bits", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const std::size_t n = 40009;
  const std::vector<float> x = randn(n, 111, 30.0f);
  for (bool round_bf16 : {false, true}) {
    INFO("round_bf16 " << round_bf16);
    Buf cx = upload_f32(*tw.cpu, x), gx = upload_f32(*tw.gpu, x);
    tw.cpu->muon_scale_round(cx.f(), n, 37.3f, round_bf16);
    tw.gpu->muon_scale_round(gx.f(), n, 37.3f, round_bf16);
    const std::vector<float> got = download_f32(*tw.gpu, gx, n), want = download_f32(*tw.cpu, cx, n);
    REQUIRE(std::memcmp(got.data(), want.data(), 4 * n) == 0);
    if (round_bf16)
      for (float v : got) REQUIRE(v == round_to(DType::BF16, v));
  }
}

TEST_CASE("gpu gemm_f32 vs cpu: every transpose, alpha and beta, fp32 products (no TF32)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::BF16);  // gemm_f32 is fp32 whatever the compute dtype
  Backend& c = *tw.cpu;
  Backend& g = *tw.gpu;
  const int M = 37, N = 53, K = 130;  // odd sizes: no tile divides them
  const std::vector<float> a = randn(std::size_t(M) * K, 121), b = randn(std::size_t(K) * N, 122),
                           c0 = randn(std::size_t(M) * N, 123);
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (float beta : {0.0f, 0.5f}) {
        INFO("trans_a " << trans_a << " trans_b " << trans_b << " beta " << beta);
        // The same values read as (M, K) or (K, M) and (K, N) or (N, K): op() picks the layout.
        Buf ca = upload_f32(c, a), cb = upload_f32(c, b), cc = upload_f32(c, c0);
        Buf ga = upload_f32(g, a), gb = upload_f32(g, b), gc = upload_f32(g, c0);
        c.gemm_f32(cc.f(), ca.f(), cb.f(), M, N, K, trans_a, trans_b, 0.75f, beta);
        g.gemm_f32(gc.f(), ga.f(), gb.f(), M, N, K, trans_a, trans_b, 0.75f, beta);
        const std::size_t mn = std::size_t(M) * N;
        GPTRAIN_CHECK_CLOSE("gemm_f32", download_f32(g, gc, mn), download_f32(c, cc, mn), 1e-5);
      }
  // A Newton-Schulz shape: X X^T of a wide matrix, K in the thousands.
  const int R = 64, W = 2304;
  const std::vector<float> x = randn(std::size_t(R) * W, 124, 0.02f);
  Buf cx = upload_f32(c, x), gx = upload_f32(g, x), cxx(c, std::size_t(R) * R * 4), gxx(g, std::size_t(R) * R * 4);
  c.gemm_f32(cxx.f(), cx.f(), cx.f(), R, R, W, false, true, 1.0f, 0.0f);
  g.gemm_f32(gxx.f(), gx.f(), gx.f(), R, R, W, false, true, 1.0f, 0.0f);
  GPTRAIN_CHECK_CLOSE("gemm_f32 X X^T", download_f32(g, gxx, std::size_t(R) * R),
                      download_f32(c, cxx, std::size_t(R) * R), 1e-5);
}

TEST_CASE("gpu copy_2d_f32: a block between strided matrices, the rest of dst untouched", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const int rows = 19, cols = 45, src_ld = 61, dst_ld = 50;
  const std::vector<float> src = randn(std::size_t(rows) * src_ld, 131), dst0 = randn(std::size_t(rows) * dst_ld, 132);
  Buf cs = upload_f32(*tw.cpu, src), cd = upload_f32(*tw.cpu, dst0);
  Buf gs = upload_f32(*tw.gpu, src), gd = upload_f32(*tw.gpu, dst0);
  tw.cpu->copy_2d_f32(cd.f(), dst_ld, cs.f(), src_ld, rows, cols);
  tw.gpu->copy_2d_f32(gd.f(), dst_ld, gs.f(), src_ld, rows, cols);
  const std::vector<float> got = download_f32(*tw.gpu, gd, dst0.size()), want = download_f32(*tw.cpu, cd, dst0.size());
  REQUIRE(std::memcmp(got.data(), want.data(), 4 * got.size()) == 0);
  CHECK(got[std::size_t(rows - 1) * dst_ld + cols] == dst0[std::size_t(rows - 1) * dst_ld + cols]);  // past the block
  CHECK(got[std::size_t(rows - 1) * dst_ld + cols - 1] == src[std::size_t(rows - 1) * src_ld + cols - 1]);
}
