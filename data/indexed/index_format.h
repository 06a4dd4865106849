// Constants of the MMIDIDX .idx header (docs/megatron-compat.md §1.2), shared by reader and writer.
#pragma once

#include <cstdint>

namespace gptrain {

// "MMIDIDX" followed by two NUL bytes.
inline constexpr char kIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIndexVersion = 1;
// magic(9) + version u64(8) + dtype u8(1) + sequence count u64(8) + document-index length u64(8).
inline constexpr uint64_t kIndexHeaderBytes = 34;

}  // namespace gptrain
