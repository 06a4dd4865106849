// A branch-free expf the compiler can vectorise inside `#pragma omp simd` loops (glibc's expf is a
// scalar call there unless built with -ffast-math). Used by the CPU attention, whose softmax takes
// T^2/2 exponentials per head: scalar calls would cost more than the GEMMs. Relative error < 1e-7 on
// the range the softmax uses (x <= 0); x < -87 flushes to 0. erf_simd serves the erf form of GELU.
#pragma once

#include <cstdint>
#include <cstring>

namespace gptrain::cpu {

inline float exp_simd(float x) {
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, in vector registers
  const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;  // |r| <= ln2/2
  // exp(r) by its Taylor-like minimax polynomial (Cephes' coefficients for expf)
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = (p * r) * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, 4);
  return x < -87.0f ? 0.0f : er * scale;
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error < 5e-7 in float), branch-free so it vectorises:
// erf(|x|) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|), sign restored.
inline float erf_simd(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float y = 1.061405429f;
  y = y * t - 1.453152027f;
  y = y * t + 1.421413741f;
  y = y * t - 0.284496736f;
  y = y * t + 0.254829592f;
  const float r = 1.0f - y * t * exp_simd(-ax * ax);
  return x < 0.0f ? -r : r;
}

}  // namespace gptrain::cpu
