// Binary search over the generated non-ASCII ranges (unicode_tables.cpp).
#include "data/tokenizer/unicode_tables.h"

namespace gptrain::unicode {

namespace {

// The class of the range holding cp (ranges sorted, inclusive bounds), or none.
template <class Range, class Klass>
Klass find_range(const Range* ranges, size_t count, uint32_t cp, Klass none) {
  size_t lo = 0, hi = count;  // first range with range.hi >= cp
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (ranges[mid].hi < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && ranges[lo].lo <= cp ? ranges[lo].klass : none;
}

}  // namespace

CharClass classify_non_ascii(uint32_t cp) { return find_range(kNonAsciiRanges, kNonAsciiRangeCount, cp, kOther); }

CaseClass case_class_non_ascii(uint32_t cp) {
  return find_range(kNonAsciiCaseRanges, kNonAsciiCaseRangeCount, cp, kNoCase);
}

}  // namespace gptrain::unicode
