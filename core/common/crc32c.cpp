// CRC-32C: the hardware instruction eight bytes at a time where the CPU has it (checked once at run time
// on x86-64, at compile time on AArch64), else a byte-at-a-time table.
#include "core/common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#endif

namespace gptrain {
namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

// On the inverted register (the caller inverts before and after).
uint32_t table_loop(uint32_t c, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xffu] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t hardware_loop(uint32_t c, const unsigned char* p, size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c = _mm_crc32_u8(c, *p);
  return c;
}
bool have_hardware() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
uint32_t hardware_loop(uint32_t c, const unsigned char* p, size_t n) {
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __crc32cd(c, word);
  }
  for (; n > 0; --n, ++p) c = __crc32cb(c, *p);
  return c;
}
constexpr bool have_hardware() { return true; }
#else
uint32_t hardware_loop(uint32_t c, const unsigned char* p, size_t n) { return table_loop(c, p, n); }
constexpr bool have_hardware() { return false; }
#endif

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size) {
  return ~table_loop(~crc, static_cast<const unsigned char*>(data), size);
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  return have_hardware() ? ~hardware_loop(~crc, p, size) : ~table_loop(~crc, p, size);
}

}  // namespace gptrain
