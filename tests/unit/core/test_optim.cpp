// Optimizer pieces: AdamW's two ranges (decay / no decay) against a plain fp64 reference, the
// dynamic loss scaler's Megatron rules (hysteresis, window growth, floor), clipping coefficient.
#include "core/optim/adamw.h"
#include "core/optim/grad_clip.h"
#include "core/optim/loss_scaler.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace gptrain;

TEST_CASE("optim: AdamW decays the first range only and matches an fp64 reference") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 10, nd = 6;
  std::vector<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f, g[i] = 0.05f * float(int(i) - 4);
  float* dp = static_cast<float*>(be->alloc(n * 4));
  float* dg = static_cast<float*>(be->alloc(n * 4));
  be->copy_to_device(dp, p.data(), n * 4);
  be->copy_to_device(dg, g.data(), n * 4);
  AdamW opt(*be, dp, n, nd, AdamWHyper{0.9f, 0.95f, 1e-8f});
  std::vector<double> rp(p.begin(), p.end()), m(n, 0), v(n, 0);
  const double lr = 1e-2, wd = 0.1, scale = 0.5;
  for (int step = 1; step <= 3; ++step) {
    opt.step(dg, float(lr), float(wd), float(scale));
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = double(g[i]) * scale;
      m[i] = 0.9 * m[i] + 0.1 * gi;
      v[i] = 0.95 * v[i] + 0.05 * gi * gi;
      const double mh = m[i] / (1 - std::pow(0.9, step)), vh = v[i] / (1 - std::pow(0.95, step));
      rp[i] -= lr * (mh / (std::sqrt(vh) + 1e-8) + (i < nd ? wd : 0.0) * rp[i]);
    }
  }
  REQUIRE(opt.steps() == 3);
  std::vector<float> out(n);
  be->copy_to_host(out.data(), dp, n * 4);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(out[i] == Approx(rp[i]).margin(1e-6));
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: AdamW over pieces updates only them, with state at their local offsets") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 12, nd = 5;
  std::vector<float> p(n), g(4);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f;
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.05f * float(int(i) - 2);
  float* dp = static_cast<float*>(be->alloc(n * 4));
  float* dg = static_cast<float*>(be->alloc(g.size() * 4));
  be->copy_to_device(dp, p.data(), n * 4);
  be->copy_to_device(dg, g.data(), g.size() * 4);
  // Parameters [3, 6) straddle the weight-decay cut at 5; [9, 10) has none. Local: [0, 3) and [3, 4).
  AdamW opt(*be, dp, n, nd, AdamWHyper{0.9f, 0.95f, 1e-8f}, {{3, 6, 0}, {9, 10, 3}}, 4);
  REQUIRE(opt.local_size() == 4);
  opt.step(dg, 1e-2f, 0.1f, 1.0f);
  std::vector<float> out(n), m(4);
  be->copy_to_host(out.data(), dp, n * 4);
  be->copy_to_host(m.data(), opt.exp_avg(), 4 * 4);
  for (std::size_t i : {0, 1, 2, 6, 7, 8, 10, 11}) REQUIRE(out[i] == p[i]);  // outside the pieces: untouched
  const std::size_t global[4] = {3, 4, 5, 9};
  for (std::size_t l = 0; l < 4; ++l) {
    REQUIRE(m[l] == Approx(0.1f * g[l]));
    // Step 1: mhat/(sqrt(vhat)+eps) = sign(g); decay on global offsets below 5 only.
    const double wd = global[l] < nd ? 0.1 : 0.0;
    const double want = g[l] == 0.0f ? p[global[l]] * (1 - 1e-2 * wd)
                                     : p[global[l]] - 1e-2 * ((g[l] > 0 ? 1.0 : -1.0) + wd * p[global[l]]);
    REQUIRE(out[global[l]] == Approx(want).margin(1e-6));
  }
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: dynamic loss scaler (hysteresis, growth window, floor) and state round trip") {
  LossScaler s = LossScaler::dynamic(1024, 256, 3, 2);
  s.update(true);  // first overflow: uses up one hysteresis credit, scale kept
  REQUIRE(s.scale() == 1024);
  s.update(true);  // credits gone: halve
  REQUIRE(s.scale() == 512);
  s.update(true);  // still no credits: halve again
  REQUIRE(s.scale() == 256);
  s.update(true);  // floor
  REQUIRE(s.scale() == 256);
  s.update(false), s.update(false);
  REQUIRE(s.scale() == 256);
  const auto saved = s.state_json();
  s.update(false);  // third clean iteration: double, credits refilled
  REQUIRE(s.scale() == 512);
  s.update(true);
  REQUIRE(s.scale() == 512);  // hysteresis 2 again
  LossScaler r = LossScaler::dynamic(1024, 256, 3, 2);
  r.load_state_json(saved);
  r.update(false);
  REQUIRE(r.scale() == 512);
  LossScaler c = LossScaler::constant(128);
  c.update(true);
  REQUIRE(c.scale() == 128);
  REQUIRE(LossScaler::none().scale() == 1.0);
}

TEST_CASE("optim: clip coefficient as torch clip_grad_norm_") {
  REQUIRE(clip_coefficient(0.5, 1.0) == 1.0);
  REQUIRE(clip_coefficient(4.0, 1.0) == Approx(1.0 / (4.0 + 1e-6)));
  REQUIRE(clip_coefficient(100.0, 0.0) == 1.0);
}
