// NFC; see nfc.h. The composition loop is the one of UAX #15 (a character composes with the last
// starter unless a character of the same or a higher combining class, or a starter, stands between).
#include "data/tokenizer/nfc.h"

#include "data/tokenizer/unicode_tables.h"

#include <algorithm>
#include <vector>

namespace gptrain::unicode {

namespace {

constexpr uint32_t kInvalidByte = 0x80000000u;  // | the byte: not valid UTF-8, kept as it is
constexpr uint32_t SBase = 0xAC00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11A7;
constexpr uint32_t LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;

int ccc(uint32_t cp) {
  if (cp < 0x300 || cp >= kInvalidByte) return 0;
  const CombiningClass* e = std::lower_bound(kCombiningClasses, kCombiningClasses + kCombiningClassCount, cp,
                                             [](const CombiningClass& c, uint32_t v) { return c.cp < v; });
  return e != kCombiningClasses + kCombiningClassCount && e->cp == cp ? e->klass : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= SBase && cp < SBase + SCount) {
    const uint32_t s = cp - SBase;
    out.push_back(LBase + s / NCount);
    out.push_back(VBase + (s % NCount) / TCount);
    if (s % TCount) out.push_back(TBase + s % TCount);
    return;
  }
  if (cp >= 0xC0 && cp < kInvalidByte) {
    const Decomposition* e = std::lower_bound(kDecompositions, kDecompositions + kDecompositionCount, cp,
                                              [](const Decomposition& d, uint32_t v) { return d.cp < v; });
    if (e != kDecompositions + kDecompositionCount && e->cp == cp) {
      decompose(e->first, out);
      if (e->second) decompose(e->second, out);
      return;
    }
  }
  out.push_back(cp);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= LBase && a < LBase + LCount && b >= VBase && b < VBase + VCount)
    return SBase + ((a - LBase) * VCount + (b - VBase)) * TCount;
  if (a >= SBase && a < SBase + SCount && (a - SBase) % TCount == 0 && b > TBase && b < TBase + TCount)
    return a + (b - TBase);
  const Composition* e = std::lower_bound(kCompositions, kCompositions + kCompositionCount, std::pair(a, b),
                                          [](const Composition& c, std::pair<uint32_t, uint32_t> v) {
                                            return c.first != v.first ? c.first < v.first : c.second < v.second;
                                          });
  return e != kCompositions + kCompositionCount && e->first == a && e->second == b ? e->composite : 0;
}

}  // namespace

void nfc(std::string_view in, std::string& out) {
  // Text below U+0300 (ASCII, Latin-1, most of Latin Extended) is NFC already: nothing there decomposes
  // under NFC or composes with what precedes it.
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const bool simple = std::all_of(s, s + in.size(), [](unsigned char c) { return c < 0xCC; });
  if (simple) {
    out.assign(in);
    return;
  }
  std::vector<uint32_t> cps;
  cps.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    uint32_t cp;
    const int len = decode_utf8(s, i, in.size(), cp);
    decompose(cp == 0xFFFFFFFFu ? kInvalidByte | s[i] : cp, cps);
    i += static_cast<size_t>(len);
  }
  // Canonical ordering: each run of non-starters sorted by class, stably.
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                     [](uint32_t a, uint32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  // Composition.
  if (!cps.empty()) {
    size_t starter = 0, kept = 1;
    int last_class = ccc(cps[0]) ? 256 : 0;
    for (size_t i = 1; i < cps.size(); ++i) {
      const uint32_t ch = cps[i];
      const int cls = ccc(ch);
      const uint32_t composite = last_class == 256 ? 0 : compose(cps[starter], ch);
      if (composite && (last_class < cls || last_class == 0)) {
        cps[starter] = composite;
        continue;
      }
      if (cls == 0) starter = kept;
      last_class = cls;
      cps[kept++] = ch;
    }
    cps.resize(kept);
  }
  out.clear();
  for (uint32_t cp : cps) {
    if (cp >= kInvalidByte)
      out.push_back(static_cast<char>(cp & 0xFF));
    else
      append_utf8(cp, out);
  }
}

}  // namespace gptrain::unicode
