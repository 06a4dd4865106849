// Binary search over the generated non-ASCII ranges (unicode_tables.cpp).
#include "data/tokenizer/unicode_tables.h"

namespace gptrain::unicode {

CharClass classify_non_ascii(uint32_t cp) {
  size_t lo = 0, hi = kNonAsciiRangeCount;  // first range with range.hi >= cp
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (kNonAsciiRanges[mid].hi < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < kNonAsciiRangeCount && kNonAsciiRanges[lo].lo <= cp) return kNonAsciiRanges[lo].klass;
  return kOther;
}

}  // namespace gptrain::unicode
