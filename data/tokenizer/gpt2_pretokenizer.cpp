// The GPT-2 split regex as a scanner; the rules are in gpt2_pretokenizer.h.
#include "data/tokenizer/gpt2_pretokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/pretokenizer_scanner.h"

#include <limits>

namespace gptrain {

using unicode::CharClass;

void gpt2_pretokenize(std::string_view text, std::vector<TextPiece>& out) {
  check(text.size() < std::numeric_limits<uint32_t>::max(), "pre-tokenizer: text of {} bytes is over 4 GiB",
        text.size());
  out.clear();
  const PretokenScanner sc{reinterpret_cast<const unsigned char*>(text.data()), text.size()};
  const size_t n = text.size();
  size_t i = 0;
  auto emit = [&](size_t b, size_t e) { out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)}); };
  while (i < n) {
    const unsigned char c = sc.s[i];
    if (c == '\'') {
      if (size_t len = sc.contraction(i)) {
        emit(i, i + len);
        i += len;
        continue;
      }
    }
    int len;
    CharClass k = sc.at(i, len);
    size_t start = i;
    if (c == ' ' && i + 1 < n) {
      // " ?X+" where X is the class of the character after the space.
      int len2;
      const CharClass k2 = sc.at(i + 1, len2);
      if (k2 != unicode::kSpace) {
        const size_t e = sc.run_end(i + 1 + static_cast<size_t>(len2), k2);
        emit(start, e);
        i = e;
        continue;
      }
    }
    if (k != unicode::kSpace) {
      const size_t e = sc.run_end(i + static_cast<size_t>(len), k);
      emit(start, e);
      i = e;
      continue;
    }
    // White space run [i, e); remember where its last character starts.
    size_t last = i;
    size_t e = i + static_cast<size_t>(len);
    while (e < n) {
      int l;
      if (sc.at(e, l) != unicode::kSpace) break;
      last = e;
      e += static_cast<size_t>(l);
    }
    if (e == n || last == start) {
      emit(start, e);  // \s+(?!\S) to the end, or a lone \s+ before a non-space
      i = e;
    } else {
      emit(start, last);  // \s+(?!\S): the run minus its last character
      i = last;
    }
  }
}

}  // namespace gptrain
