// Megatron's NullTokenizer: the text is token ids already, written as decimal numbers separated by
// single spaces. Ids are 0..N-1 for --vocab-size N, and the end-of-document id is N (vocabulary N + 1).
#pragma once

#include "data/tokenizer/tokenizer.h"

namespace gptrain {

class NullTokenizer final : public Tokenizer {
 public:
  explicit NullTokenizer(int vocab_size);
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<NullTokenizer>(*this); }
  // "3 14 15" -> {3, 14, 15}; anything but ids in [0, N] separated by single spaces is an error.
  void encode(std::string_view text, std::vector<int32_t>& out) override;
  using Tokenizer::encode;
  std::string decode(std::span<const int32_t> ids) const override;  // "3 14 15"
  std::string_view type() const override { return "NullTokenizer"; }
  int32_t vocab_size() const override { return n_ + 1; }
  int32_t eod_id() const override { return n_; }

 private:
  int32_t n_;
};

}  // namespace gptrain
