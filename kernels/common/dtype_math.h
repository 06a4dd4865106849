// Element conversions fp32 <-> bf16 and fp32 <-> fp16 on raw 16-bit patterns, identical on host and
// device, so a checkpoint written by one backend reads bit-identically in the other and the CPU tests
// cover the CUDA twin's conversions. Both narrowing conversions round to nearest, ties to even; NaN
// stays a (quiet) NaN with its sign, overflow goes to +-inf (fp16) exactly as IEEE 754 narrowing does.
// Written out in integer arithmetic instead of __float2bfloat16 / _Float16 so there is one definition.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/hd.h"

namespace gptrain {

GPTRAIN_HD inline uint32_t f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

GPTRAIN_HD inline float f32_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// ---- bfloat16: the top 16 bits of an fp32 ----
GPTRAIN_HD inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even on the 16 dropped bits (inf stays inf)
  return static_cast<uint16_t>(u >> 16);
}

GPTRAIN_HD inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// One step of a bf16 reduction (collectives over bf16 buffers): the exact fp32 result of the two bf16
// operands, rounded to bf16 (a bf16 sum of two values is exact in fp32, so this is one rounding).
GPTRAIN_HD inline uint16_t bf16_add(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) + bf16_to_f32(b)); }
GPTRAIN_HD inline uint16_t bf16_max(uint16_t a, uint16_t b) { return bf16_to_f32(b) > bf16_to_f32(a) ? b : a; }

// ---- IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ----
GPTRAIN_HD inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);                        // >= 65520 rounds to inf
  if (x >= 0x38800000u) {  // normal half (>= 2^-14): rebias the exponent (127 -> 15), round 13 bits
    x += 0xfffu + ((x >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((x - 0x38000000u) >> 13));
  }
  if (x <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds (to even) to zero
  // subnormal half: value / 2^-24 = mantissa >> (126 - exponent), rounded to nearest even
  const uint32_t e = x >> 23;
  const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

GPTRAIN_HD inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (m << 13));  // inf / NaN (payload kept)
  if (e == 0) {
    if (m == 0) return f32_from_bits(sign);
    // subnormal: shift the mantissa up until its leading 1 reaches the implicit-bit position
    e = 113;  // exponent of 2^-14 in fp32 bias, minus the first shift below
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --e;
    }
    return f32_from_bits(sign | (e << 23) | ((m & 0x3ffu) << 13));
  }
  return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace gptrain
