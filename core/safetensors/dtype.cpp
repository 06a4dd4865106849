#include "core/safetensors/dtype.h"

#include "core/common/error.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

namespace gptrain::safetensors {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t bits;
};

constexpr std::array<DTypeInfo, 22> kTypes{{
    {DType::BOOL, "BOOL", 8},
    {DType::F4, "F4", 4},
    {DType::F6_E2M3, "F6_E2M3", 6},
    {DType::F6_E3M2, "F6_E3M2", 6},
    {DType::U8, "U8", 8},
    {DType::I8, "I8", 8},
    {DType::F8_E5M2, "F8_E5M2", 8},
    {DType::F8_E4M3, "F8_E4M3", 8},
    {DType::F8_E8M0, "F8_E8M0", 8},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {DType::I16, "I16", 16},
    {DType::U16, "U16", 16},
    {DType::F16, "F16", 16},
    {DType::BF16, "BF16", 16},
    {DType::I32, "I32", 32},
    {DType::U32, "U32", 32},
    {DType::F32, "F32", 32},
    {DType::C64, "C64", 64},
    {DType::F64, "F64", 64},
    {DType::I64, "I64", 64},
    {DType::U64, "U64", 64},
}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  fail("safetensors: unknown dtype code {}", static_cast<int>(t));
}

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::size_t dtype_bits(DType t) { return info(t).bits; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

bool dtype_is_float_convertible(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F64;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                                       // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // value = abs_f; half subnormal unit is 2^-24. Round to nearest even in integer arithmetic.
    const int exp = static_cast<int>(abs >> 23);
    if (exp < 102) return sign;                           // < 2^-25: rounds to zero
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // 24-bit significand, value = mant * 2^(exp-150)
    const int shift = 126 - exp;                          // value / 2^-24 = mant >> (126 - exp)... = mant * 2^(exp-126)
    const uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = q;
    if (rem > half || (rem == half && (q & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // normal: rebias exponent 127 -> 15, keep 10 mantissa bits, round to nearest even
  uint32_t h = ((abs >> 13) - ((127u - 15u) << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may roll into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

void to_f32(float* dst, const void* src, DType src_t, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(src);
  switch (src_t) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    case DType::F64:
      for (std::size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, b + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    default: fail("safetensors: cannot convert dtype {} to F32 (supported: F32, BF16, F16, F64)", dtype_name(src_t));
  }
}

void from_f32(void* dst, DType dst_t, const float* src, std::size_t n) {
  auto* b = static_cast<unsigned char*>(dst);
  switch (dst_t) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(b + 2 * i, &h, 2);
      }
      return;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(b + 2 * i, &h, 2);
      }
      return;
    case DType::F64:
      for (std::size_t i = 0; i < n; ++i) {
        const double d = src[i];
        std::memcpy(b + 8 * i, &d, 8);
      }
      return;
    default: fail("safetensors: cannot convert F32 to dtype {} (supported: F32, BF16, F16, F64)", dtype_name(dst_t));
  }
}

}  // namespace gptrain::safetensors
