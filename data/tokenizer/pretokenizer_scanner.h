// The character-level helpers the split-regex scanners share: class of the character at a byte
// offset, end of a run of one class, and the English contractions.
#pragma once

#include "data/tokenizer/unicode_tables.h"

#include <cstddef>

namespace gptrain {

struct PretokenScanner {
  const unsigned char* s;
  size_t n;

  // Class and byte length of the character at i (i < n).
  unicode::CharClass at(size_t i, int& len) const {
    const unsigned char c = s[i];
    if (c < 0x80) {
      len = 1;
      return unicode::ascii_class(c);
    }
    uint32_t cp;
    len = unicode::decode_utf8(s, i, n, cp);
    return cp == 0xFFFFFFFFu ? unicode::kOther : unicode::classify_non_ascii(cp);
  }

  // End of the run of characters of class k starting at i.
  size_t run_end(size_t i, unicode::CharClass k) const {
    while (i < n) {
      const unsigned char c = s[i];
      if (c < 0x80) {  // ASCII fast path
        if (unicode::ascii_class(c) != k) break;
        ++i;
        continue;
      }
      int len;
      if (at(i, len) != k) break;
      i += static_cast<size_t>(len);
    }
    return i;
  }

  // Length of a contraction ('s 't 'm 'd 're 've 'll, lower case only) at i, or 0.
  size_t contraction(size_t i) const {
    if (i + 1 >= n) return 0;
    const unsigned char a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    const unsigned char b = s[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  // Length of a contraction at i matched case-insensitively ((?i:'s|'t|'re|'ve|'m|'ll|'d)), or 0.
  // Case folding adds upper case and U+017F LATIN SMALL LETTER LONG S, which folds to 's'.
  size_t contraction_any_case(size_t i) const {
    if (i + 1 >= n) return 0;
    auto lower = [&](size_t k) { return static_cast<unsigned char>(s[k] | 0x20); };  // only compared to letters
    const unsigned char a = lower(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (s[i + 1] == 0xC5 && i + 2 < n && s[i + 2] == 0xBF) return 3;  // U+017F
    if (i + 2 >= n) return 0;
    const unsigned char b = lower(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }
};

}  // namespace gptrain
