// Megatron's TikTokenizer (--tokenizer-type TikTokenizer --tokenizer-model FILE --tiktoken-pattern
// v1|v2), the ids of megatron/core's TikTokenTokenizer.text_to_ids, i.e. tiktoken's
// encode(text, allowed_special="all"), without Python:
//   - ids 0..S-1 are the special tokens (S = --tiktoken-num-special-tokens, default 1000): the named
//     ones (--tokenizer-special-tokens / --tiktoken-special-tokens, default <unk> <s> </s> <mask> <pad>
//     <cls> <sep>, which a custom list must include) then fillers <SPECIAL_k> for k = named..S-1;
//   - ids S..V-1 are the file's ranks 0..V-S-1 (V = --vocab-size, default 131072; the file's later
//     ranks are dropped);
//   - a special token's text anywhere in the input is its id (leftmost-longest); the text between is
//     split by the pattern (tiktoken_pretokenizer.h) and each piece encoded by rank (rank_bpe.h).
// No BOS is added; the end-of-document id is </s>'s. decode concatenates bytes, special tokens as
// their text, without replacing bytes that are not valid UTF-8 (tiktoken's decode puts U+FFFD there).
// Input that is not valid UTF-8 is encoded with each invalid byte as an "other" character.
#pragma once

#include "data/tokenizer/tiktoken_pretokenizer.h"
#include "data/tokenizer/tokenizer.h"

#include <memory>

namespace gptrain {

class BpeCache;
class RankBpe;

struct TikTokenizerOptions {
  std::string path;                                        // --tokenizer-model
  TiktokenPattern pattern = TiktokenPattern::kV2;          // --tiktoken-pattern
  int64_t vocab_size = 131072;                             // --vocab-size (Megatron's default 2^17)
  int64_t num_special_tokens = 1000;                       // --tiktoken-num-special-tokens
  std::optional<std::vector<std::string>> special_tokens;  // the named special tokens, in id order
};

class TikTokenizer final : public Tokenizer {
 public:
  explicit TikTokenizer(const TikTokenizerOptions& o);
  TikTokenizer(const TikTokenizer& other);  // shares the tables, own cache
  ~TikTokenizer() override;
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<TikTokenizer>(*this); }

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  using Tokenizer::encode;
  std::string decode(std::span<const int32_t> ids) const override;
  std::string_view type() const override { return "TikTokenizer"; }
  int32_t vocab_size() const override;
  int32_t eod_id() const override;
  std::optional<int32_t> bos_id() const override;
  std::vector<SpecialToken> special_tokens() const override;  // the named ones (not the fillers)

  // What convert_to_hf needs to write the same tokenizer as a tokenizer.json.
  TiktokenPattern pattern() const;
  const std::vector<std::string>& all_special_tokens() const;  // (S,) named then fillers; id = position
  const RankBpe& ranks() const;                                // id = rank + S

 private:
  struct Shared;
  void encode_ordinary(std::string_view text, std::vector<int32_t>& out);
  std::shared_ptr<const Shared> shared_;
  std::unique_ptr<BpeCache> cache_;
};

}  // namespace gptrain
