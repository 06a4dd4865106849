// --optimizer sgd's step against an fp64 torch.optim.SGD reference (L2 decay on the first range only,
// momentum, its state array), --optimizer lion's (Lion on the matrix ranges, AdamW on the others) against an
// fp64 transcription, and Muon's Newton-Schulz pieces: gemm_f32 in all four transpose combinations
// against fp64 loops, the iteration on a tall matrix equal to the transposed iteration on its transpose, and
// an orthogonalized matrix whose singular values are near 1.
#include "core/optim/adamw.h"
#include "core/optim/newton_schulz.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace gptrain;

namespace {

std::vector<float> ramp(std::size_t n, float a, float b) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(a * float(i) + b);
  return v;
}

float* upload(Backend& be, const std::vector<float>& h) {
  float* d = static_cast<float*>(be.alloc(h.size() * 4));
  be.copy_to_device(d, h.data(), h.size() * 4);
  return d;
}

// Pseudo-random values in [-1, 1) (full rank, unlike a sampled sine).
std::vector<float> noise(std::size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1u << 23) - 1.0f;
  }
  return v;
}

}  // namespace

TEST_CASE("optim: SGD with momentum decays the first range only and matches an fp64 torch.optim.SGD") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 10, nd = 6;
  std::vector<float> p = ramp(n, 0.7f, 0.1f), g = ramp(n, 1.3f, 0.5f);
  float* dp = upload(*be, p);
  float* dg = upload(*be, g);
  AdamWHyper h;
  h.rule = UpdateRule::sgd;
  h.sgd_momentum = 0.8f;
  AdamW opt(*be, dp, n, nd, h);
  std::vector<double> rp(p.begin(), p.end()), buf(n, 0.0);
  const double lr = 0.1, wd = 0.1, scale = 0.5;
  for (int step = 1; step <= 3; ++step) {
    opt.step(dg, float(lr), float(wd), float(scale));
    for (std::size_t i = 0; i < n; ++i) {
      const double d = double(g[i]) * scale + (i < nd ? wd : 0.0) * rp[i];
      buf[i] = step == 1 ? d : 0.8 * buf[i] + d;
      rp[i] -= lr * buf[i];
    }
  }
  std::vector<float> got(n), mom(n);
  be->copy_to_host(got.data(), dp, n * 4);
  opt.state_to_host(0, mom.data());
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(got[i] == Approx(rp[i]).margin(1e-6));
    CHECK(mom[i] == Approx(buf[i]).margin(1e-6));
  }
  CHECK(optimizer_state_names(UpdateRule::sgd) == std::vector<std::string>{"momentum_buffer"});
  CHECK_THROWS_WITH(opt.state_to_host(1, mom.data()), Catch::Contains("keeps no exp_avg_sq"));
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: Lion steps the matrix ranges and AdamW the others, each as an fp64 transcription") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 12;
  std::vector<float> p = ramp(n, 0.7f, 0.1f), g = ramp(n, 1.3f, 0.5f);
  float* dp = upload(*be, p);
  float* dg = upload(*be, g);
  AdamWHyper h;
  h.rule = UpdateRule::lion;
  h.beta1 = h.lion_beta1 = 0.9f;
  h.beta2 = h.lion_beta2 = 0.95f;
  // [0, 5) a decayed matrix, [5, 8) a decayed non-matrix, [8, 10) a second matrix, [10, 12) undecayed.
  std::vector<ParamGroupRange> groups{
      {0, 5, true, false, true}, {5, 8, true, false, false}, {8, 10, true, false, true}, {10, 12, false, false, false}};
  AdamW opt(*be, dp, n, groups, h, {AdamW::Piece{0, n, 0}}, n);
  auto matrix = [](std::size_t i) { return i < 5 || (i >= 8 && i < 10); };
  std::vector<double> rp(p.begin(), p.end()), m(n, 0.0), v(n, 0.0);
  const double lr = 0.01, wd = 0.1, scale = 0.5, b1 = 0.9, b2 = 0.95, eps = 1e-8;
  for (int step = 1; step <= 3; ++step) {
    // Different gradients each step, so that the sign of the interpolation changes for some elements.
    for (std::size_t i = 0; i < n; ++i) g[i] = std::sin(1.3f * float(i) + 0.5f + 2.1f * float(step));
    be->copy_to_device(dg, g.data(), n * 4);
    opt.step(dg, float(lr), float(wd), float(scale));
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = double(g[i]) * scale, w = i < 10 ? wd : 0.0;
      rp[i] -= lr * w * rp[i];
      if (matrix(i)) {
        const double mix = b1 * m[i] + (1 - b1) * gi;
        m[i] += (1 - b2) * (gi - m[i]);
        rp[i] -= lr * (mix > 0 ? 1.0 : mix < 0 ? -1.0 : 0.0);
      } else {
        m[i] += (1 - b1) * (gi - m[i]);
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        rp[i] -= lr / (1 - std::pow(b1, step)) * m[i] / (std::sqrt(v[i] / (1 - std::pow(b2, step))) + eps);
      }
    }
  }
  std::vector<float> got(n), exp_avg(n);
  be->copy_to_host(got.data(), dp, n * 4);
  opt.state_to_host(0, exp_avg.data());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(rp[i]).margin(1e-6));
    CHECK(exp_avg[i] == Approx(m[i]).margin(1e-6));
  }
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: gemm_f32 row-major with each transpose combination matches fp64 loops") {
  auto be = make_backend("cpu", DType::F32);
  const int M = 5, N = 4, K = 3;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const std::vector<float> A = ramp(std::size_t(M * K), 0.37f, 0.2f), B = ramp(std::size_t(K * N), 0.51f, 1.0f);
      std::vector<float> C = ramp(std::size_t(M * N), 0.11f, 0.3f);
      float* dA = upload(*be, A);
      float* dB = upload(*be, B);
      float* dC = upload(*be, C);
      be->gemm_f32(dC, dA, dB, M, N, K, ta != 0, tb != 0, 1.5f, 0.5f);
      std::vector<float> got(C.size());
      be->copy_to_host(got.data(), dC, got.size() * 4);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = 0;
          for (int k = 0; k < K; ++k)
            s += double(ta ? A[std::size_t(k * M + i)] : A[std::size_t(i * K + k)]) *
                 double(tb ? B[std::size_t(j * K + k)] : B[std::size_t(k * N + j)]);
          CHECK(got[std::size_t(i * N + j)] == Approx(1.5 * s + 0.5 * C[std::size_t(i * N + j)]).margin(1e-5));
        }
      be->release(dA);
      be->release(dB);
      be->release(dC);
    }
}

TEST_CASE("optim: Newton-Schulz orthogonalizes, and a tall matrix is the transpose of its transpose's result") {
  auto be = make_backend("cpu", DType::F32);
  const int R = 12, C = 5;
  const std::vector<float> X = noise(std::size_t(R * C), 7);
  std::vector<float> Xt(X.size());
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) Xt[std::size_t(j * R + i)] = X[std::size_t(i * C + j)];
  float* tall = upload(*be, X);
  float* wide = upload(*be, Xt);
  const NewtonSchulzOptions o{5, "quintic", false};
  newton_schulz(*be, tall, R, C, o);
  newton_schulz(*be, wide, C, R, o);
  std::vector<float> a(X.size()), b(X.size());
  be->copy_to_host(a.data(), tall, a.size() * 4);
  be->copy_to_host(b.data(), wide, b.size() * 4);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) CHECK(a[std::size_t(i * C + j)] == Approx(b[std::size_t(j * R + i)]).margin(1e-5));
  // O^T O (C x C) near the identity: the quintic coefficients leave singular values within about [0.7, 1.2].
  for (int p = 0; p < C; ++p)
    for (int q = 0; q < C; ++q) {
      double s = 0;
      for (int i = 0; i < R; ++i) s += double(a[std::size_t(i * C + p)]) * a[std::size_t(i * C + q)];
      if (p == q)
        CHECK((s > 0.45 && s < 1.5));
      else
        CHECK(std::abs(s) < 0.35);
    }
  CHECK_THROWS_WITH(newton_schulz_coefficients("custom", 5), Catch::Contains("is not one of"));
  CHECK(newton_schulz_coefficients("polar_express", 10)[9] == newton_schulz_coefficients("polar_express", 8)[7]);
  CHECK(newton_schulz_coefficients("quintic", 6)[5] == newton_schulz_coefficients("quintic", 1)[0]);
  be->release(tall);
  be->release(wide);
}
