// FP8 element maths shared by the CPU twin and the CUDA kernels: fp32 <-> E4M3 / E5M2 on raw 8-bit
// patterns, and the scaled quantisation of FP8 training (x * scale cast with saturation, as Transformer
// Engine's casts do; the value read back is code * (1 / scale)).
//   E4M3 ("fn"): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinity, S.1111.111 is NaN,
//                largest finite 448, smallest subnormal 2^-9.
//   E5M2:        1 sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE-style inf (S.11111.00) and NaNs,
//                largest finite 57344, smallest subnormal 2^-16.
// Narrowing rounds to nearest, ties to even, subnormals included. Out of range: saturating casts give the
// largest finite value of the sign (infinities too); non-saturating ones give what IEEE narrowing gives,
// inf for E5M2 and NaN for E4M3, which has no inf. NaN stays NaN with its sign.
#pragma once

#include <cstdint>

#include "kernels/common/dtype_math.h"
#include "kernels/common/hd.h"

namespace gptrain {

struct Fp8Format {
  int mantissa_bits;
  int exponent_bias;
  uint8_t max_finite;  // magnitude code of the largest finite value
  uint8_t overflow;    // magnitude code a non-saturating overflow gives (inf, or NaN where there is none)
  uint8_t nan;         // magnitude code of the canonical NaN
  bool has_inf;
};

GPTRAIN_HD constexpr Fp8Format fp8_e4m3() { return Fp8Format{3, 7, 0x7e, 0x7f, 0x7f, false}; }
GPTRAIN_HD constexpr Fp8Format fp8_e5m2() { return Fp8Format{2, 15, 0x7b, 0x7c, 0x7e, true}; }

GPTRAIN_HD inline bool fp8_is_nan(uint8_t c, Fp8Format fmt) {
  const uint32_t mag = c & 0x7fu;
  if (!fmt.has_inf) return mag == 0x7fu;
  return mag > fmt.overflow;  // exponent all ones, mantissa non-zero
}

GPTRAIN_HD inline float fp8_to_f32(uint8_t c, Fp8Format fmt) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7fu;
  if (fp8_is_nan(c, fmt)) return f32_from_bits(sign | 0x7fc00000u);
  if (fmt.has_inf && mag == fmt.overflow) return f32_from_bits(sign | 0x7f800000u);
  const uint32_t e = mag >> fmt.mantissa_bits;
  const uint32_t m = mag & ((1u << fmt.mantissa_bits) - 1u);
  if (e == 0) {  // subnormal: m units of 2^(1 - bias - mantissa bits), exact in fp32
    const float unit = f32_from_bits(static_cast<uint32_t>(128 - fmt.exponent_bias - fmt.mantissa_bits) << 23);
    const float v = static_cast<float>(m) * unit;
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((e + 127u - static_cast<uint32_t>(fmt.exponent_bias)) << 23) |
                       (m << (23 - fmt.mantissa_bits)));
}

GPTRAIN_HD inline uint8_t fp8_from_f32(float f, Fp8Format fmt, bool saturate) {
  uint32_t x = f32_bits(f);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  x &= 0x7fffffffu;
  const uint8_t overflow = saturate ? fmt.max_finite : fmt.overflow;
  if (x > 0x7f800000u) return static_cast<uint8_t>(sign | fmt.nan);
  if (x == 0x7f800000u) return static_cast<uint8_t>(sign | overflow);
  const int drop = 23 - fmt.mantissa_bits;  // fp32 mantissa bits that go
  const uint32_t rebias = static_cast<uint32_t>(127 - fmt.exponent_bias) << 23;
  uint32_t code;
  if (x >= rebias + (1u << 23)) {  // a normal FP8 value (or an overflow): round the dropped bits, rebias
    const uint32_t r = x + ((1u << (drop - 1)) - 1u) + ((x >> drop) & 1u);
    code = (r - rebias) >> drop;  // a carry out of the mantissa lands in the exponent, as it should
  } else {
    // subnormal FP8: the value in units of 2^(1 - bias - mantissa bits), rounded to nearest even; the
    // top of the range may round up to the smallest normal, whose code is the next integer
    const uint32_t e = x >> 23;
    const int shift = 151 - fmt.exponent_bias - fmt.mantissa_bits - static_cast<int>(e);
    if (e == 0 || shift > 24) return sign;  // below half the smallest subnormal: zero
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    code = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (code & 1u))) ++code;
  }
  if (code > fmt.max_finite) code = overflow;
  return static_cast<uint8_t>(sign | code);
}

// Scaled quantisation of FP8 training: the tensor is multiplied by its scale before the saturating cast,
// and read back multiplied by scale_inv = 1 / scale (held as its own fp32 number, as the GEMMs take it).
GPTRAIN_HD inline uint8_t fp8_quantize(float x, float scale, Fp8Format fmt) {
  return fp8_from_f32(x * scale, fmt, true);
}
GPTRAIN_HD inline float fp8_dequantize(uint8_t c, float scale_inv, Fp8Format fmt) {
  return fp8_to_f32(c, fmt) * scale_inv;
}

}  // namespace gptrain
