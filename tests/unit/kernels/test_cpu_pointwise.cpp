// CPU twins of the elementwise ops: GELU (tanh, erf), SwiGLU, squared ReLU, residual add, scaling, sum of squares,
// dropout (determinism, keep rate, offsets), dtype conversion, and the backend factory's errors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"
#include "kernels/dropout/philox.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

TEST_CASE("gelu tanh and erf: forward against double formulas, backward by finite differences, in place") {
  auto be = cpu_backend();
  const std::size_t n = 40000;  // large enough to be split across threads
  auto x = randn(n, 101, 2.0f), r = randn(n, 102);
  for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf}) {
    std::vector<float> out(n), ref(n);
    be->gelu_forward(out.data(), x.data(), n, kind);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      ref[i] = static_cast<float>(kind == GeluKind::Tanh
                                      ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                                      : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    }
    REQUIRE(rel_err(out, ref) < 1e-6);
    std::vector<float> xs(x.begin(), x.begin() + 500), rs(r.begin(), r.begin() + 500), d(500);
    be->gelu_backward(d.data(), xs.data(), rs.data(), 500, kind);
    auto loss = [&] {
      std::vector<float> o(500);
      be->gelu_forward(o.data(), xs.data(), 500, kind);
      return dot(o, rs);
    };
    check_gradient(kind == GeluKind::Tanh ? "gelu tanh" : "gelu erf", loss, xs, d, 200, 1e-3f);
    auto inplace = x;
    be->gelu_forward(inplace.data(), inplace.data(), n, kind);
    REQUIRE(inplace == out);
    auto dinplace = r;
    std::vector<float> dref(n);
    be->gelu_backward(dref.data(), x.data(), r.data(), n, kind);
    be->gelu_backward(dinplace.data(), x.data(), dinplace.data(), n, kind);
    REQUIRE(dinplace == dref);
  }
  // the two forms differ (by up to ~1e-3): a test that mixed them up would notice
  std::vector<float> a(n), b(n);
  be->gelu_forward(a.data(), x.data(), n, GeluKind::Tanh);
  be->gelu_forward(b.data(), x.data(), n, GeluKind::Erf);
  REQUIRE(max_abs_diff(a, b) > 1e-4);
}

TEST_CASE("swiglu: forward against silu(gate) * up, backward by finite differences") {
  auto be = cpu_backend();
  const int N = 7, F = 13;
  auto x = randn(2 * N * F, 111, 1.5f), r = randn(N * F, 112);
  std::vector<float> out(N * F);
  be->swiglu_forward(out.data(), x.data(), N, F);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < F; ++j) {
      const double g = x[i * 2 * F + j], u = x[i * 2 * F + F + j];
      REQUIRE(out[i * F + j] == Approx(g / (1 + std::exp(-g)) * u).epsilon(1e-5).margin(1e-7));
    }
  std::vector<float> d(2 * N * F);
  be->swiglu_backward(d.data(), x.data(), r.data(), N, F);
  auto loss = [&] {
    std::vector<float> o(N * F);
    be->swiglu_forward(o.data(), x.data(), N, F);
    return dot(o, r);
  };
  check_gradient("swiglu", loss, x, d, 400, 1e-3f);
}

TEST_CASE("geglu: forward against gelu(gate) * up of both forms, backward by finite differences") {
  auto be = cpu_backend();
  const int N = 7, F = 13;
  auto x = randn(2 * N * F, 121, 1.5f), r = randn(N * F, 122);
  for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf}) {
    INFO("kind " << (kind == GeluKind::Tanh ? "tanh" : "erf"));
    std::vector<float> out(N * F);
    be->geglu_forward(out.data(), x.data(), N, F, kind);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < F; ++j) {
        const double g = x[i * 2 * F + j], u = x[i * 2 * F + F + j];
        const double act = kind == GeluKind::Tanh
                               ? 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)))
                               : 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
        REQUIRE(out[i * F + j] == Approx(act * u).epsilon(1e-5).margin(1e-6));
      }
    std::vector<float> d(2 * N * F);
    be->geglu_backward(d.data(), x.data(), r.data(), N, F, kind);
    auto loss = [&] {
      std::vector<float> o(N * F);
      be->geglu_forward(o.data(), x.data(), N, F, kind);
      return dot(o, r);
    };
    check_gradient("geglu", loss, x, d, 400, 1e-3f);
  }
}

TEST_CASE("squared relu: forward against max(x, 0)^2, backward by finite differences, in place") {
  auto be = cpu_backend();
  const std::size_t n = 40000;  // large enough to be split across threads
  auto x = randn(n, 121, 2.0f), r = randn(n, 122);
  std::vector<float> out(n), ref(n);
  be->squared_relu_forward(out.data(), x.data(), n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = static_cast<float>(std::pow(std::max(double(x[i]), 0.0), 2.0));
  REQUIRE(rel_err(out, ref) < 1e-7);
  // Away from the kink at 0, where the one-sided differences disagree.
  std::vector<float> xs, rs;
  for (std::size_t i = 0; xs.size() < 500; ++i)
    if (std::abs(x[i]) > 1e-2f) xs.push_back(x[i]), rs.push_back(r[i]);
  std::vector<float> d(500);
  be->squared_relu_backward(d.data(), xs.data(), rs.data(), 500);
  auto loss = [&] {
    std::vector<float> o(500);
    be->squared_relu_forward(o.data(), xs.data(), 500);
    return dot(o, rs);
  };
  check_gradient("squared relu", loss, xs, d, 200, 1e-3f);
  auto inplace = x;
  be->squared_relu_forward(inplace.data(), inplace.data(), n);
  REQUIRE(inplace == out);
  std::vector<float> dref(n);
  be->squared_relu_backward(dref.data(), x.data(), r.data(), n);
  auto dinplace = r;
  be->squared_relu_backward(dinplace.data(), x.data(), dinplace.data(), n);
  REQUIRE(dinplace == dref);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(dref[i] == (x[i] > 0 ? 2.0f * x[i] * r[i] : 0.0f));
}

TEST_CASE("add, add_inplace, scale_inplace and the fp64 sum of squares") {
  auto be = cpu_backend();
  const std::size_t n = 100003;
  auto a = randn(n, 121), b = randn(n, 122);
  std::vector<float> out(n);
  be->add(out.data(), a.data(), b.data(), n);
  for (std::size_t i = 0; i < n; i += 97) REQUIRE(out[i] == a[i] + b[i]);
  auto c = a;
  be->add_inplace(c.data(), b.data(), n);
  REQUIRE(c == out);
  be->scale_inplace(c.data(), 0.5f, n);
  for (std::size_t i = 0; i < n; i += 97) REQUIRE(c[i] == out[i] * 0.5f);
  double ref = 0;
  for (float v : a) ref += static_cast<double>(v) * v;
  REQUIRE(be->sum_squares(a.data(), n) == Approx(ref).epsilon(1e-12));
  REQUIRE(be->sum_squares(a.data(), 0) == 0.0);
  a[5000] = std::numeric_limits<float>::infinity();
  REQUIRE(std::isinf(be->sum_squares(a.data(), n)));
  a[70000] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(std::isnan(be->sum_squares(a.data(), n)));
}

TEST_CASE("dropout: Philox mask by global index, keep rate, scaling, backward = same mask") {
  auto be = cpu_backend();
  const std::size_t n = 200001;
  const float p = 0.3f;
  std::vector<float> x(n, 1.0f), out(n), out2(n);
  be->dropout_forward(out.data(), x.data(), n, p, 77, 13);
  be->dropout_forward(out2.data(), x.data(), n, p, 77, 13);
  REQUIRE(out == out2);  // deterministic
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool keep = philox_uniform(77, 13 + i) >= p;  // the documented mapping, element by element
    REQUIRE(out[i] == (keep ? 1.0f / (1.0f - p) : 0.0f));
    kept += keep;
  }
  REQUIRE(static_cast<double>(kept) / n == Approx(1 - p).margin(0.005));
  // a call on a sub-range with offset + 1001 reproduces the same elements (offset arithmetic, unaligned)
  std::vector<float> part(5000);
  be->dropout_forward(part.data(), x.data(), part.size(), p, 77, 13 + 1001);
  for (std::size_t i = 0; i < part.size(); ++i) REQUIRE(part[i] == out[1001 + i]);
  be->dropout_forward(out2.data(), x.data(), n, p, 78, 13);
  REQUIRE(out2 != out);  // another seed, another mask
  // backward: gradient check of <dropout(x), r>
  auto xs = randn(300, 131), r = randn(300, 132);
  std::vector<float> d(300);
  be->dropout_backward(d.data(), r.data(), 300, p, 5, 6);
  auto loss = [&] {
    std::vector<float> o(300);
    be->dropout_forward(o.data(), xs.data(), 300, p, 5, 6);
    return dot(o, r);
  };
  check_gradient("dropout", loss, xs, d, 300);
  // p = 0 is the identity (also in place); p = 1 is rejected
  auto y = xs;
  be->dropout_forward(y.data(), y.data(), y.size(), 0.0f, 5, 6);
  REQUIRE(y == xs);
  REQUIRE_THROWS_WITH(be->dropout_forward(y.data(), xs.data(), y.size(), 1.0f, 5, 6), Catch::Contains("[0, 1)"));
}

TEST_CASE("convert between fp32, bf16 and fp16 uses the shared rounding") {
  auto be = cpu_backend();
  const std::size_t n = 70000;
  auto x = randn(n, 141, 100.0f);
  std::vector<uint16_t> h(n), bf(n), h2(n);
  std::vector<float> back(n);
  be->convert(bf.data(), DType::BF16, x.data(), DType::F32, n);
  be->convert(h.data(), DType::F16, x.data(), DType::F32, n);
  for (std::size_t i = 0; i < n; i += 7) {
    REQUIRE(bf[i] == f32_to_bf16(x[i]));
    REQUIRE(h[i] == f32_to_f16(x[i]));
  }
  be->convert(back.data(), DType::F32, h.data(), DType::F16, n);
  for (std::size_t i = 0; i < n; i += 7) REQUIRE(back[i] == f16_to_f32(h[i]));
  be->convert(h2.data(), DType::F16, bf.data(), DType::BF16, n);
  for (std::size_t i = 0; i < n; i += 7) REQUIRE(h2[i] == f32_to_f16(bf16_to_f32(bf[i])));
  std::vector<float> same(n);
  be->convert(same.data(), DType::F32, x.data(), DType::F32, n);
  REQUIRE(same == x);
}

TEST_CASE("make_backend: cpu is fp32 only, cuda needs a CUDA build, unknown names are rejected") {
  auto be = make_backend("cpu", DType::F32);
  REQUIRE(std::string(be->name()) == "cpu");
  REQUIRE(be->compute_dtype() == DType::F32);
  REQUIRE_THROWS_WITH(make_backend("cpu", DType::BF16), Catch::Contains("fp32 only"));
  REQUIRE_THROWS_WITH(make_backend("cpu", DType::F16), Catch::Contains("fp32 only"));
  REQUIRE_THROWS_WITH(make_backend("tpu", DType::F32), Catch::Contains("unknown backend"));
#ifndef GPTRAIN_HAVE_CUDA
  REQUIRE_THROWS_WITH(make_backend("cuda", DType::F32), Catch::Contains("no CUDA backend"));
#endif
  void* p = be->alloc(1000);
  REQUIRE(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  be->fill_zero(p, 1000);
  REQUIRE(static_cast<unsigned char*>(p)[999] == 0);
  be->release(p);
}
