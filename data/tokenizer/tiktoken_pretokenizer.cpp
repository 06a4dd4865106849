// TikTokenizer's v1/v2 split patterns as scanners; the rules are in tiktoken_pretokenizer.h.
#include "data/tokenizer/tiktoken_pretokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/llama3_pretokenizer.h"
#include "data/tokenizer/unicode_tables.h"

#include <limits>

namespace gptrain {

namespace {

struct Char {
  unicode::CharClass klass;
  unicode::CaseClass letter_case;
  uint32_t len;
  bool newline;  // \r or \n
};

class V2Scanner {
 public:
  V2Scanner(std::string_view text) : s_(reinterpret_cast<const unsigned char*>(text.data())), n_(text.size()) {}

  Char at(size_t i) const {
    uint32_t cp;
    const int len = unicode::decode_utf8(s_, i, n_, cp);
    if (cp == 0xFFFFFFFFu) return {unicode::kOther, unicode::kNoCase, 1, false};
    return {unicode::classify(cp), unicode::case_class(cp), static_cast<uint32_t>(len), cp == '\r' || cp == '\n'};
  }
  static bool upper(const Char& c) { return c.letter_case & unicode::kUpper; }
  static bool lower(const Char& c) { return c.letter_case & unicode::kLower; }
  static bool prefix(const Char& c) { return !c.newline && c.klass != unicode::kLetter && c.klass != unicode::kNumber; }

  // End of the run from i of characters that pass keep.
  template <class Keep>
  size_t run_end(size_t i, Keep keep) const {
    while (i < n_) {
      const Char c = at(i);
      if (!keep(c)) break;
      i += c.len;
    }
    return i;
  }
  size_t lower_run_end(size_t i) const { return run_end(i, lower); }
  size_t upper_run_end(size_t i) const { return run_end(i, upper); }
  size_t other_run_end(size_t i) const {
    return run_end(i, [](const Char& c) { return c.klass == unicode::kOther; });
  }
  // End of [upper]*[lower]+ matched at i, or npos.
  size_t upper_then_lower(size_t i) const {
    size_t last_lower_end = std::string_view::npos;
    while (i < n_) {
      const Char c = at(i);
      if (!upper(c)) break;
      i += c.len;
      if (lower(c)) last_lower_end = i;
    }
    if (i < n_ && lower(at(i))) return lower_run_end(i);
    return last_lower_end;
  }
  // End of the piece that starts at i (rules 1-7).
  size_t piece_end(size_t i) const {
    constexpr size_t npos = std::string_view::npos;
    const Char c = at(i);
    const size_t next = i + c.len;
    const bool has_prefix = prefix(c) && next < n_;
    if (has_prefix) {  // 1, with the prefix
      if (const size_t e = upper_then_lower(next); e != npos) return e;
    }
    if (upper(c) || lower(c)) {  // 1, without it
      if (const size_t e = upper_then_lower(i); e != npos) return e;
    }
    if (has_prefix && upper(at(next))) return lower_run_end(upper_run_end(next));  // 2, with the prefix
    if (upper(c)) return lower_run_end(upper_run_end(i));                          // 2, without it
    if (c.klass == unicode::kNumber) return next;                                  // 3
    const bool space_then_other = s_[i] == ' ' && next < n_ && at(next).klass == unicode::kOther;
    if (c.klass == unicode::kOther || space_then_other) {  // 4
      size_t e = other_run_end(c.klass == unicode::kOther ? next : next + at(next).len);
      while (e < n_ && (s_[e] == '\r' || s_[e] == '\n' || s_[e] == '/')) ++e;
      return e;
    }
    // White space: the run [i, e), where its last character and its last \r/\n start.
    size_t e = i, last = i, last_newline = npos;
    while (e < n_) {
      const Char w = at(e);
      if (w.klass != unicode::kSpace) break;
      if (w.newline) last_newline = e;
      last = e;
      e += w.len;
    }
    if (last_newline != npos) return last_newline + 1;  // 5
    if (e == n_ || last == i) return e;                 // 6 to the end, or 7
    return last;                                        // 6
  }

 private:
  const unsigned char* s_;
  size_t n_;
};

}  // namespace

void tiktoken_pretokenize(std::string_view text, TiktokenPattern pattern, std::vector<TextPiece>& out) {
  if (pattern == TiktokenPattern::kV1) return llama3_pretokenize(text, 1, out, /*contractions=*/false);
  check(text.size() < std::numeric_limits<uint32_t>::max(), "pre-tokenizer: text of {} bytes is over 4 GiB",
        text.size());
  out.clear();
  const V2Scanner sc(text);
  for (size_t i = 0; i < text.size();) {
    const size_t e = sc.piece_end(i);
    out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(e)});
    i = e;
  }
}

}  // namespace gptrain
