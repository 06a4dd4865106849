// Llama-3's split regex as a scanner; the rules are in llama3_pretokenizer.h.
#include "data/tokenizer/llama3_pretokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/pretokenizer_scanner.h"

#include <limits>

namespace gptrain {

void llama3_pretokenize(std::string_view text, int max_digits, std::vector<TextPiece>& out, bool contractions) {
  using unicode::kLetter, unicode::kNumber, unicode::kOther, unicode::kSpace;
  check(text.size() < std::numeric_limits<uint32_t>::max(), "pre-tokenizer: text of {} bytes is over 4 GiB",
        text.size());
  out.clear();
  const PretokenScanner sc{reinterpret_cast<const unsigned char*>(text.data()), text.size()};
  const size_t n = text.size();
  auto newline = [&](size_t k) { return sc.s[k] == '\r' || sc.s[k] == '\n'; };
  size_t i = 0;
  auto emit = [&](size_t e) {
    out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(e)});
    i = e;
  };
  while (i < n) {
    if (contractions && sc.s[i] == '\'') {  // 1
      if (const size_t len = sc.contraction_any_case(i)) {
        emit(i + len);
        continue;
      }
    }
    int len;
    const unicode::CharClass k = sc.at(i, len);
    const size_t next = i + static_cast<size_t>(len);
    int len2 = 0;
    const unicode::CharClass k2 = next < n ? sc.at(next, len2) : kOther;
    if (k == kLetter) {  // 2, without the leading character
      emit(sc.run_end(next, kLetter));
      continue;
    }
    if (k != kNumber && !newline(i) && next < n && k2 == kLetter) {  // 2, with it
      emit(sc.run_end(next + static_cast<size_t>(len2), kLetter));
      continue;
    }
    if (k == kNumber) {  // 3
      size_t e = next;
      for (int count = 1; count < max_digits && e < n; ++count) {
        int l;
        if (sc.at(e, l) != kNumber) break;
        e += static_cast<size_t>(l);
      }
      emit(e);
      continue;
    }
    const bool space_then_other = sc.s[i] == ' ' && next < n && k2 == kOther;
    if (k == kOther || space_then_other) {  // 4
      size_t e = sc.run_end(k == kOther ? next : next + static_cast<size_t>(len2), kOther);
      while (e < n && newline(e)) ++e;
      emit(e);
      continue;
    }
    // k == kSpace: the white-space run [i, e), where its last character and its last \r/\n start.
    size_t e = i, last = i, last_newline = n;
    while (e < n) {
      int l;
      if (sc.at(e, l) != kSpace) break;
      if (newline(e)) last_newline = e;
      last = e;
      e += static_cast<size_t>(l);
    }
    if (last_newline != n)
      emit(last_newline + 1);  // 5
    else if (e == n || last == i)
      emit(e);  // 6 to the end, or 7
    else
      emit(last);  // 6
  }
}

}  // namespace gptrain
