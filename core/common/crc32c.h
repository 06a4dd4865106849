// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), and TFRecord's masked form.
// TensorBoard event records and checkpoint tensors use it; check values from RFC 3720 B.4 are in the
// unit tests. Checkpoints hash gigabytes, so the CPU's CRC32 instruction is used where there is one
// (SSE 4.2 on x86-64, the CRC extension on AArch64), with a table-driven loop as the portable fallback;
// every path gives the same value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gptrain {

// CRC-32C of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(std::string_view bytes) { return crc32c_extend(0, bytes.data(), bytes.size()); }
// The table-driven loop alone (tests compare it with the hardware path).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);

// TFRecord's rotate-and-add mask, so CRCs of data that itself contains CRCs stay well distributed.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace gptrain
