// safetensors element types and the fp32 <-> bf16/fp16 conversions used when reading and writing.
// Conversions to 16-bit formats round to nearest even (as torch's .to(bfloat16)/.half()), so a
// file written here holds the same bits torch would produce from the same fp32 values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gptrain::safetensors {

// Every dtype the format defines (safetensors/src/tensor.rs). F32/BF16/F16/F64 convert to fp32 on
// read; the others are readable as raw bytes.
enum class DType : uint8_t {
  BOOL,
  F4,
  F6_E2M3,
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64,
  F64,
  I64,
  U64,
};

std::string_view dtype_name(DType t);                     // "F32"
std::optional<DType> parse_dtype(std::string_view name);  // nullopt when unknown
std::size_t dtype_bits(DType t);                          // 32 for F32, 4 for F4, 6 for F6_*
// True for the types read_f32 can convert to fp32 (F32, BF16, F16, F64).
bool dtype_is_float_convertible(DType t);

uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// Convert n elements of src (type src_t) to fp32 (dst). Unaligned src is fine.
void to_f32(float* dst, const void* src, DType src_t, std::size_t n);
// Convert n fp32 values to dst_t (F32, BF16, F16 or F64). Unaligned dst is fine.
void from_f32(void* dst, DType dst_t, const float* src, std::size_t n);

}  // namespace gptrain::safetensors
