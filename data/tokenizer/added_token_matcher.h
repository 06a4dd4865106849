// Special (added) tokens found in text wherever they occur, leftmost-longest: Hugging Face's added
// vocabulary and tiktoken's special tokens. Candidates are the positions whose byte starts some token;
// at each, the tokens are looked up by length, longest first, so a thousand tokens of a few lengths
// (Megatron's TikTokenizer fillers <SPECIAL_k>) cost a few hash lookups per candidate, not a scan.
#pragma once

#include <algorithm>
#include <functional>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gptrain {

class AddedTokenMatcher {
 public:
  // A token added twice keeps its first id.
  void add(const std::string& content, int32_t id) {
    contents_.push_back(content);
    ids_.push_back(id);
    first_byte_[static_cast<unsigned char>(content[0])] = true;
  }
  // Call once after the last add().
  void finish() {
    for (size_t k = 0; k < contents_.size(); ++k) {
      const size_t len = contents_[k].size();
      auto it = std::find_if(by_length_.begin(), by_length_.end(), [&](const Group& g) { return g.length == len; });
      if (it == by_length_.end()) it = by_length_.insert(by_length_.end(), Group{len, {}});
      it->tokens.emplace(contents_[k], ids_[k]);
    }
    std::sort(by_length_.begin(), by_length_.end(), [](const Group& a, const Group& b) { return a.length > b.length; });
  }
  bool empty() const { return contents_.empty(); }
  // The first position >= pos where a token starts, and the longest token there; npos if none.
  size_t find(std::string_view text, size_t pos, size_t& len, int32_t& id) const {
    for (size_t i = pos; i < text.size(); ++i) {
      if (!first_byte_[static_cast<unsigned char>(text[i])]) continue;
      for (const Group& g : by_length_) {
        if (g.length > text.size() - i) continue;
        const auto it = g.tokens.find(text.substr(i, g.length));
        if (it != g.tokens.end()) {
          len = g.length;
          id = it->second;
          return i;
        }
      }
    }
    return std::string_view::npos;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Group {
    size_t length;
    std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> tokens;
  };
  std::vector<std::string> contents_;
  std::vector<int32_t> ids_;
  std::vector<Group> by_length_;
  bool first_byte_[256] = {};
};

}  // namespace gptrain
