// Code point classes for the pre-tokenizers: letter (\p{L}), number (\p{N}), white space (\s) and
// other, and the letter case tiktoken's v2 pattern distinguishes. Non-ASCII ranges are generated (unicode_tables.cpp,
// see gen_unicode_tables.py for how and which Unicode version); ASCII is a 128-entry table here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gptrain::unicode {

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

struct CodePointRange {
  uint32_t lo, hi;  // inclusive
  CharClass klass;
};

extern const CodePointRange kNonAsciiRanges[];
extern const size_t kNonAsciiRangeCount;
extern const char kUnicodeTablesVersion[];

// Class of a non-ASCII code point (binary search over the generated ranges).
CharClass classify_non_ascii(uint32_t cp);

// Letter case as tiktoken's v2 pattern sees it: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] is "upper" and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] is "lower", so Lm, Lo and the marks are both.
enum CaseClass : uint8_t { kNoCase = 0, kUpper = 1, kLower = 2, kUpperLower = 3 };

struct CaseRange {
  uint32_t lo, hi;  // inclusive
  CaseClass klass;
};

extern const CaseRange kNonAsciiCaseRanges[];
extern const size_t kNonAsciiCaseRangeCount;

CaseClass case_class_non_ascii(uint32_t cp);

inline CaseClass case_class(uint32_t cp) {
  if (cp >= 0x80) return case_class_non_ascii(cp);
  if (cp >= 'A' && cp <= 'Z') return kUpper;
  return cp >= 'a' && cp <= 'z' ? kLower : kNoCase;
}

inline constexpr CharClass ascii_class_slow(unsigned char c) {
  if (c >= 'a' && c <= 'z') return kLetter;
  if (c >= 'A' && c <= 'Z') return kLetter;
  if (c >= '0' && c <= '9') return kNumber;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return kSpace;
  return kOther;
}

struct AsciiClassTable {
  CharClass klass[128];
  constexpr AsciiClassTable() : klass() {
    for (unsigned c = 0; c < 128; ++c) klass[c] = ascii_class_slow(static_cast<unsigned char>(c));
  }
};
inline constexpr AsciiClassTable kAsciiClasses{};

// Class of an ASCII byte (c < 0x80): one table load on the pre-tokenizer's hot path.
inline CharClass ascii_class(unsigned char c) { return kAsciiClasses.klass[c]; }

inline CharClass classify(uint32_t cp) {
  return cp < 0x80 ? ascii_class(static_cast<unsigned char>(cp)) : classify_non_ascii(cp);
}

// Decodes one UTF-8 character at s[i] (i < n). Returns its byte length (1..4) and sets cp. A byte that
// does not start a valid, shortest-form UTF-8 sequence (or a surrogate) is taken alone: length 1 and
// cp = 0xFFFFFFFF, which classifies as "other".
inline int decode_utf8(const unsigned char* s, size_t i, size_t n, uint32_t& cp) {
  const unsigned char c = s[i];
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  auto cont = [&](size_t k) { return i + k < n && (s[i + k] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF && cont(1)) {
    cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF && cont(1) && cont(2)) {
    uint32_t v = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
    if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) {
      cp = v;
      return 3;
    }
  } else if (c >= 0xF0 && c <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    uint32_t v = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
    if (v >= 0x10000 && v <= 0x10FFFF) {
      cp = v;
      return 4;
    }
  }
  cp = 0xFFFFFFFFu;
  return 1;
}

// Appends the UTF-8 encoding of the scalar value cp (<= U+10FFFF).
inline void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace gptrain::unicode
