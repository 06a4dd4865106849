// fp32 <-> bf16 / fp16 conversions of kernels/common/dtype_math.h (shared with the CUDA twins):
// exhaustive round trips and agreement with independent references (the compiler's _Float16 for fp16,
// a nearest-of-two-candidates search in double for bf16).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/common/dtype_math.h"

using namespace gptrain;

namespace {

bool is_nan_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool is_nan_bf16(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

uint16_t ref_f16(float f) {
  _Float16 h = static_cast<_Float16>(f);  // IEEE round-to-nearest-even in libgcc/hardware
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// Reference bf16 rounding: choose the nearer of truncation and truncation+1ulp in double, ties to even.
uint16_t ref_bf16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t lo = static_cast<uint16_t>(u >> 16);
  if ((u & 0xffffu) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  const double dl = std::fabs(static_cast<double>(bf16_to_f32(lo)) - f);
  const double dh = std::fabs(static_cast<double>(bf16_to_f32(hi)) - f);
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1u) ? hi : lo;
}

float random_float_bits(std::mt19937& rng) { return f32_from_bits(static_cast<uint32_t>(rng())); }

}  // namespace

TEST_CASE("fp16 round trip is exact for every half bit pattern") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = f16_to_f32(b);
    _Float16 r;
    std::memcpy(&r, &b, 2);
    if (is_nan_f16(b)) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_f16(f32_to_f16(f)));
      continue;
    }
    REQUIRE(f == static_cast<float>(r));  // widening agrees with the compiler's
    REQUIRE(f32_to_f16(f) == b);
  }
}

TEST_CASE("fp32 -> fp16 rounds to nearest even like the compiler's _Float16") {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    float f = random_float_bits(rng);
    if (i % 2) f = std::ldexp(static_cast<float>(rng() % 4096) / 1024.0f, static_cast<int>(rng() % 44) - 30);
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_f16(f) == ref_f16(f));
    ++checked;
  }
  // the edges: halfway cases, overflow threshold, subnormal boundaries
  const float edges[] = {65504.0f,       65519.99f,     65520.0f,      65536.0f,      1e-8f,      2.9802322e-8f,
                         2.9802326e-8f,  5.9604645e-8f, 6.1035156e-5f, 6.1035149e-5f, 1.0009766f, 1.00048828125f,
                         1.00146484375f, -0.0f,         INFINITY,      -INFINITY};
  for (float f : edges) REQUIRE(f32_to_f16(f) == ref_f16(f));
  REQUIRE(checked > 1900000);
}

TEST_CASE("bf16 round trip is exact and fp32 -> bf16 rounds to nearest even") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = bf16_to_f32(b);
    if (is_nan_bf16(b)) {
      REQUIRE(is_nan_bf16(f32_to_bf16(f)));
      continue;
    }
    REQUIRE(f32_to_bf16(f) == b);
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 2000000; ++i) {
    const float f = random_float_bits(rng);
    if (std::isnan(f)) {
      REQUIRE(is_nan_bf16(f32_to_bf16(f)));
      continue;
    }
    if (std::isinf(f) || std::fabs(f) > 3.38e38f) continue;  // the reference needs a finite neighbour
    REQUIRE(f32_to_bf16(f) == ref_bf16(f));
  }
  REQUIRE(f32_to_bf16(1.0f + 1.0f / 256.0f) == f32_to_bf16(1.0f));                  // tie -> even (down)
  REQUIRE(f32_to_bf16(1.0f + 3.0f / 256.0f) == f32_to_bf16(1.0f + 4.0f / 256.0f));  // tie -> even (up)
  REQUIRE(std::isinf(bf16_to_f32(f32_to_bf16(3.4028235e38f))));                     // max float rounds up to inf
}
