// GPU vs CPU twin: conversions, residual add, scale, fp64 sum of squares, dropout (same Philox mask),
// GELU (tanh/erf) and SwiGLU forward/backward, in fp32, bf16 and fp16; squared ReLU (the cpu twin's value
// rounded once); the FP8 casts (same bytes, same amax).
#include <cmath>
#include <limits>

#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

TEST_CASE("gpu convert: fp32 <-> bf16/fp16 bit-identical to the shared host conversion", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::BF16);
  Backend& g = *tw.gpu;
  std::vector<float> x = randn(4099, 1, 3.0f);
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = 1e30f;  // overflows fp16
  x[2] = 1e-30f;
  for (DType t : {DType::BF16, DType::F16}) {
    Buf src = upload_f32(g, x);
    Buf narrow(g, x.size() * 2);
    Buf back(g, x.size() * 4);
    g.convert(narrow.get(), t, src.get(), DType::F32, x.size());
    g.convert(back.get(), DType::F32, narrow.get(), t, x.size());
    std::vector<float> got = download_f32(g, back, x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("dtype " << dtype_name(t) << " element " << i << " value " << x[i]);
      const float want = round_to(t, x[i]);
      REQUIRE(std::memcmp(&got[i], &want, 4) == 0);
    }
  }
}

TEST_CASE("gpu add, add_inplace, scale_inplace vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    const std::size_t n = 10007;
    std::vector<float> a = rounded(t, randn(n, 2)), b = rounded(t, randn(n, 3));
    Buf ca = upload_f32(*tw.cpu, a), cb = upload_f32(*tw.cpu, b), cout(*tw.cpu, n * 4);
    Buf ga = upload(*tw.gpu, t, a), gb = upload(*tw.gpu, t, b), gout(*tw.gpu, n * dtype_size(t));
    tw.cpu->add(cout.get(), ca.get(), cb.get(), n);
    tw.gpu->add(gout.get(), ga.get(), gb.get(), n);
    GPTRAIN_CHECK_CLOSE("add " << dtype_name(t), download(*tw.gpu, t, gout.get(), n), download_f32(*tw.cpu, cout, n),
                        tol(t));
    tw.cpu->add_inplace(ca.get(), cb.get(), n);
    tw.gpu->add_inplace(ga.get(), gb.get(), n);
    GPTRAIN_CHECK_CLOSE("add_inplace " << dtype_name(t), download(*tw.gpu, t, ga.get(), n),
                        download_f32(*tw.cpu, ca, n), tol(t));
  }
  Twins tw(DType::F32);
  std::vector<float> x = randn(5000, 4);
  Buf cx = upload_f32(*tw.cpu, x), gx = upload_f32(*tw.gpu, x);
  tw.cpu->scale_inplace(cx.f(), 0.37f, x.size());
  tw.gpu->scale_inplace(gx.f(), 0.37f, x.size());
  std::vector<float> gc = download_f32(*tw.gpu, gx, x.size()), cc = download_f32(*tw.cpu, cx, x.size());
  REQUIRE(std::memcmp(gc.data(), cc.data(), 4 * x.size()) == 0);  // one fp32 multiply: exact
}

TEST_CASE("gpu sum_squares: fp64 accumulation, deterministic, non-finite propagates", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const std::size_t n = (1u << 20) + 12345;  // several blocks of the two-pass reduction
  std::vector<float> x = randn(n, 5);
  double ref = 0;
  for (float v : x) ref += static_cast<double>(v) * v;
  Buf gx = upload_f32(*tw.gpu, x);
  const double a = tw.gpu->sum_squares(gx.f(), n);
  const double b = tw.gpu->sum_squares(gx.f(), n);
  CHECK(std::fabs(a - ref) / ref < 1e-12);
  CHECK(std::memcmp(&a, &b, sizeof(double)) == 0);
  CHECK(std::fabs(tw.cpu->sum_squares(upload_f32(*tw.cpu, x).f(), n) - a) / ref < 1e-12);
  x[777] = std::numeric_limits<float>::infinity();
  Buf gi = upload_f32(*tw.gpu, x);
  CHECK(std::isinf(tw.gpu->sum_squares(gi.f(), n)));
  x[777] = std::numeric_limits<float>::quiet_NaN();
  Buf gn = upload_f32(*tw.gpu, x);
  CHECK(std::isnan(tw.gpu->sum_squares(gn.f(), n)));
}

TEST_CASE("gpu dropout: same Philox mask and values as the cpu twin, backward regenerates it", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    const std::size_t n = 9999;
    const uint64_t seed = 0x1234567890abcdefull, offset = 4242 + 3;  // unaligned offset: partial Philox blocks
    std::vector<float> x = rounded(t, randn(n, 6));
    Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, n * 4), gx = upload(*tw.gpu, t, x), gy(*tw.gpu, n * dtype_size(t));
    tw.cpu->dropout_forward(cy.get(), cx.get(), n, 0.3f, seed, offset);
    tw.gpu->dropout_forward(gy.get(), gx.get(), n, 0.3f, seed, offset);
    std::vector<float> c = download_f32(*tw.cpu, cy, n), g = download(*tw.gpu, t, gy.get(), n);
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE((c[i] == 0.0f) == (g[i] == 0.0f || x[i] == 0.0f));
      REQUIRE(g[i] == round_to(t, c[i]));
      dropped += c[i] == 0.0f;
    }
    CHECK(dropped > n / 5);
    CHECK(dropped < n * 2 / 5);
    // backward == forward mask applied to dout; in place (dinp == dout) allowed
    tw.gpu->dropout_backward(gx.get(), gx.get(), n, 0.3f, seed, offset);
    std::vector<float> gb = download(*tw.gpu, t, gx.get(), n);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(gb[i] == g[i]);
  }
}

TEST_CASE("gpu gelu (tanh, erf) forward/backward vs cpu, in place", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf}) {
      Twins tw(t);
      const std::size_t n = 12345;
      std::vector<float> x = rounded(t, randn(n, 7, 2.0f)), dy = rounded(t, randn(n, 8));
      Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, n * 4), cdy = upload_f32(*tw.cpu, dy);
      Buf gx = upload(*tw.gpu, t, x), gy(*tw.gpu, n * dtype_size(t)), gdy = upload(*tw.gpu, t, dy);
      tw.cpu->gelu_forward(cy.get(), cx.get(), n, kind);
      tw.gpu->gelu_forward(gy.get(), gx.get(), n, kind);
      GPTRAIN_CHECK_CLOSE("gelu fwd " << dtype_name(t), download(*tw.gpu, t, gy.get(), n), download_f32(*tw.cpu, cy, n),
                          tol(t));
      tw.cpu->gelu_backward(cdy.get(), cx.get(), cdy.get(), n, kind);  // in place: dinp == dout
      tw.gpu->gelu_backward(gdy.get(), gx.get(), gdy.get(), n, kind);
      GPTRAIN_CHECK_CLOSE("gelu bwd " << dtype_name(t), download(*tw.gpu, t, gdy.get(), n),
                          download_f32(*tw.cpu, cdy, n), tol(t));
    }
  }
}

TEST_CASE("gpu swiglu forward/backward vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    const int N = 37, F = 300;
    std::vector<float> x = rounded(t, randn(std::size_t(N) * 2 * F, 9, 2.0f)),
                       dy = rounded(t, randn(std::size_t(N) * F, 10));
    Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, dy.size() * 4), cdy = upload_f32(*tw.cpu, dy),
        cdx(*tw.cpu, x.size() * 4);
    Buf gx = upload(*tw.gpu, t, x), gy(*tw.gpu, dy.size() * 4), gdy = upload(*tw.gpu, t, dy),
        gdx(*tw.gpu, x.size() * 4);
    tw.cpu->swiglu_forward(cy.get(), cx.get(), N, F);
    tw.gpu->swiglu_forward(gy.get(), gx.get(), N, F);
    GPTRAIN_CHECK_CLOSE("swiglu fwd " << dtype_name(t), download(*tw.gpu, t, gy.get(), dy.size()),
                        download_f32(*tw.cpu, cy, dy.size()), tol(t));
    tw.cpu->swiglu_backward(cdx.get(), cx.get(), cdy.get(), N, F);
    tw.gpu->swiglu_backward(gdx.get(), gx.get(), gdy.get(), N, F);
    GPTRAIN_CHECK_CLOSE("swiglu bwd " << dtype_name(t), download(*tw.gpu, t, gdx.get(), x.size()),
                        download_f32(*tw.cpu, cdx, x.size()), tol(t));
  }
}

TEST_CASE("gpu geglu forward/backward vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf})
    for (DType t : {DType::F32, DType::BF16}) {
      Twins tw(t);
      const int N = 37, F = 300;
      std::vector<float> x = rounded(t, randn(std::size_t(N) * 2 * F, 9, 2.0f)),
                         dy = rounded(t, randn(std::size_t(N) * F, 10));
      Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, dy.size() * 4), cdy = upload_f32(*tw.cpu, dy),
          cdx(*tw.cpu, x.size() * 4);
      Buf gx = upload(*tw.gpu, t, x), gy(*tw.gpu, dy.size() * 4), gdy = upload(*tw.gpu, t, dy),
          gdx(*tw.gpu, x.size() * 4);
      tw.cpu->geglu_forward(cy.get(), cx.get(), N, F, kind);
      tw.gpu->geglu_forward(gy.get(), gx.get(), N, F, kind);
      GPTRAIN_CHECK_CLOSE("geglu fwd " << dtype_name(t), download(*tw.gpu, t, gy.get(), dy.size()),
                          download_f32(*tw.cpu, cy, dy.size()), tol(t));
      tw.cpu->geglu_backward(cdx.get(), cx.get(), cdy.get(), N, F, kind);
      tw.gpu->geglu_backward(gdx.get(), gx.get(), gdy.get(), N, F, kind);
      GPTRAIN_CHECK_CLOSE("geglu bwd " << dtype_name(t), download(*tw.gpu, t, gdx.get(), x.size()),
                          download_f32(*tw.cpu, cdx, x.size()), tol(t));
    }
}

TEST_CASE("gpu squared relu forward/backward: the cpu twin's fp32 value rounded once, in place", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  // relu(x)^2 and 2 relu(x) * dout are one fp32 product each (nothing for an FMA to fuse) from the same
  // inputs on both twins: the GPU's value is the CPU's rounded to the compute dtype, bit for bit.
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    INFO("dtype " << dtype_name(t));
    Twins tw(t);
    const std::size_t n = 12347;
    std::vector<float> x = rounded(t, randn(n, 141, 2.0f)), dy = rounded(t, randn(n, 142));
    x[0] = 0.0f, x[1] = -0.0f;  // the kink: value and derivative 0
    Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, n * 4), cdy = upload_f32(*tw.cpu, dy);
    Buf gx = upload(*tw.gpu, t, x), gy(*tw.gpu, n * dtype_size(t)), gdy = upload(*tw.gpu, t, dy);
    tw.cpu->squared_relu_forward(cy.get(), cx.get(), n);
    tw.gpu->squared_relu_forward(gy.get(), gx.get(), n);
    REQUIRE(download(*tw.gpu, t, gy.get(), n) == rounded(t, download_f32(*tw.cpu, cy, n)));
    tw.cpu->squared_relu_backward(cdy.get(), cx.get(), cdy.get(), n);  // in place: dinp == dout
    tw.gpu->squared_relu_backward(gdy.get(), gx.get(), gdy.get(), n);
    const std::vector<float> got = download(*tw.gpu, t, gdy.get(), n);
    REQUIRE(got == rounded(t, download_f32(*tw.cpu, cdy, n)));
    CHECK(got[0] == 0.0f);
  }
}

TEST_CASE("gpu fp8_cast_transpose and fp8_dequantize: the CPU twin's bytes and amax", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int R = 77, C = 45;  // partial 32 x 32 tiles on both edges
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    std::vector<float> x = rounded(t, randn(std::size_t(R) * C, 11, 4.0f));
    x[3] = round_to(t, -3e5f);  // saturates in E4M3
    const float scale = 21.0f, scale_inv = 1.0f / scale;
    for (Fp8Kind kind : {Fp8Kind::E4M3, Fp8Kind::E5M2}) {
      INFO("dtype " << dtype_name(t) << " kind " << int(kind));
      std::vector<uint8_t> want(x.size()), want_t(x.size());
      float want_amax = 0.5f;
      tw.cpu->fp8_cast_transpose(want.data(), want_t.data(), &want_amax, x.data(), &scale, R, C, kind);
      Buf gx = upload(*tw.gpu, t, x), gs = upload_f32(*tw.gpu, {scale}), gsi = upload_f32(*tw.gpu, {scale_inv});
      Buf gamax = upload_f32(*tw.gpu, {0.5f}), gout(*tw.gpu, x.size()), gout_t(*tw.gpu, x.size());
      tw.gpu->fp8_cast_transpose(static_cast<uint8_t*>(gout.get()), static_cast<uint8_t*>(gout_t.get()), gamax.f(),
                                 gx.get(), gs.f(), R, C, kind);
      REQUIRE(bytes_of(*tw.gpu, gout, x.size()) == std::vector<unsigned char>(want.begin(), want.end()));
      REQUIRE(bytes_of(*tw.gpu, gout_t, x.size()) == std::vector<unsigned char>(want_t.begin(), want_t.end()));
      REQUIRE(download_f32(*tw.gpu, gamax, 1)[0] == want_amax);
      std::vector<float> back(x.size());
      tw.cpu->fp8_dequantize(back.data(), want.data(), &scale_inv, x.size(), kind);
      Buf gback(*tw.gpu, x.size() * dtype_size(t));
      tw.gpu->fp8_dequantize(gback.get(), static_cast<const uint8_t*>(gout.get()), gsi.f(), x.size(), kind);
      REQUIRE(download(*tw.gpu, t, gback.get(), x.size()) == rounded(t, back));
    }
  }
}
