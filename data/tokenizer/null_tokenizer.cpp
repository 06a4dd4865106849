#include "data/tokenizer/null_tokenizer.h"

#include "core/common/error.h"

#include <charconv>
#include <limits>

namespace gptrain {

NullTokenizer::NullTokenizer(int vocab_size) : n_(vocab_size) {
  check(vocab_size >= 1, "--vocab-size must be >= 1 with NullTokenizer, got {}", vocab_size);
  // The end-of-document id is N itself, so N + 1 ids must fit int32.
  check(vocab_size < std::numeric_limits<int32_t>::max(),
        "--vocab-size {} with NullTokenizer: its N + 1 ids (the end-of-document id is N) do not fit int32", vocab_size);
}

void NullTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  for (size_t pos = 0;;) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string_view::npos) sp = text.size();
    const std::string_view word = text.substr(pos, sp - pos);
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    check(ec == std::errc() && end == word.data() + word.size() && id >= 0 && id <= n_,
          "NullTokenizer: \"{}\" is not a token id in [0, {}] (text must be ids separated by single spaces)", word, n_);
    out.push_back(static_cast<int32_t>(id));
    if (sp == text.size()) return;
    pos = sp + 1;
  }
}

std::string NullTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    check(id >= 0 && id <= n_, "token id {} out of range [0, {}]", id, n_);
    if (!out.empty()) out += ' ';
    out += std::to_string(id);
  }
  return out;
}

}  // namespace gptrain
