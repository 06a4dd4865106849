// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table driven, and TFRecord's masked form.
// Used for TensorBoard event files; check values from RFC 3720 B.4 are in the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gptrain::metrics {

// CRC-32C of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(std::string_view bytes) { return crc32c_extend(0, bytes.data(), bytes.size()); }

// TFRecord's rotate-and-add mask, so CRCs of data that itself contains CRCs stay well distributed.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace gptrain::metrics
