// Helpers for the CPU op tests: random tensors, a finite-difference gradient checker, error metrics.
#pragma once

#include <catch2/catch.hpp>

#include "kernels/backend.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

namespace gptrain::test {

inline std::unique_ptr<gptrain::Backend> cpu_backend() { return gptrain::make_backend("cpu", gptrain::DType::F32); }

inline std::vector<float> randn(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// <a, b> in double: the scalar "loss" whose gradient w.r.t. an op's output is b.
inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// ||a - b|| / ||b|| in double.
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

// Bit-for-bit equality (a fused op against its unfused sequence, a twin against its reference).
inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// Central finite differences of loss() w.r.t. x at up to `probes` coordinates (all when x is small),
// compared with the analytic gradient: ||num - ana|| / ||num|| over the probed coordinates must be
// below tol. A wrong sign, a transposed index or a missing term gives an error of order 1.
inline void check_gradient(const char* what, const std::function<double()>& loss, std::vector<float>& x,
                           const std::vector<float>& analytic, int probes = 64, float h = 1e-2f, double tol = 1e-2) {
  REQUIRE(analytic.size() == x.size());
  std::mt19937 rng(4242);
  std::vector<std::size_t> idx;
  if (x.size() <= static_cast<std::size_t>(probes)) {
    for (std::size_t i = 0; i < x.size(); ++i) idx.push_back(i);
  } else {
    std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
    for (int k = 0; k < probes; ++k) idx.push_back(pick(rng));
  }
  double num2 = 0, diff2 = 0;
  for (std::size_t i : idx) {
    const float x0 = x[i];
    x[i] = x0 + h;
    const double lp = loss();
    x[i] = x0 - h;
    const double lm = loss();
    x[i] = x0;
    const double num = (lp - lm) / (2.0 * h);
    num2 += num * num;
    diff2 += (num - analytic[i]) * (num - analytic[i]);
  }
  INFO(what << ": |num| = " << std::sqrt(num2) << ", |num - analytic| = " << std::sqrt(diff2));
  REQUIRE(num2 > 1e-12);  // the probe saw a real gradient: the check cannot pass vacuously
  REQUIRE(std::sqrt(diff2 / num2) < tol);
}

}  // namespace gptrain::test
