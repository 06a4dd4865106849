// Megatron's HuggingFaceTokenizer (--tokenizer-type HuggingFaceTokenizer --tokenizer-model
// DIR_OR_tokenizer.json) for BPE files, byte-level or SentencePiece-converted (Metaspace, byte
// fallback: hf_sentencepiece.h), without Python or Rust: the ids are those of
// Hugging Face `tokenizers`' encode(text) with add_special_tokens (what Megatron's tokenize() returns).
// What a file may contain: hf_tokenizer_json.h.
//
// encode(text):
//   1. Added tokens (those with normalized false first, then the others) are cut out of the text,
//      leftmost-longest, wherever they occur; each becomes its id.
//   2. Each stretch of text between them is normalized (the stretches between the normalized: false
//      tokens, before the others are cut out), gets ByteLevel's prefix space (when the file asks for it
//      and the stretch does not start with one) and is cut into pieces by the split regex, or by
//      Metaspace.
//   3. Each piece is BPE-encoded on its UTF-8 bytes, or for the SentencePiece family on its characters
//      with byte fallback (a piece that is itself a token stays whole with ignore_merges); results per
//      piece are cached.
//   4. TemplateProcessing's ids go around the result (e.g. Llama-3's <|begin_of_text|> in front).
// decode(ids) concatenates the tokens' bytes (added tokens as their text, as the ByteLevel decoder
// gives them), or runs the file's decoder chain for the SentencePiece family, without the U+FFFD
// replacement Hugging Face applies to bytes that are not valid UTF-8.
// Text that is not valid UTF-8 (which Hugging Face cannot take) is encoded with each invalid byte as
// an "other" character, so decode(encode(s)) == s for any bytes when the template adds nothing.
#pragma once

#include "data/tokenizer/tokenizer.h"

#include <memory>

namespace gptrain {

class BpeCache;
struct HfTokenizerTables;
class BpeModel;

class HuggingFaceTokenizer final : public Tokenizer {
 public:
  explicit HuggingFaceTokenizer(const std::string& file_or_dir);
  HuggingFaceTokenizer(const HuggingFaceTokenizer& other);  // shares the tables, own cache
  ~HuggingFaceTokenizer() override;
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<HuggingFaceTokenizer>(*this); }

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  using Tokenizer::encode;
  std::string decode(std::span<const int32_t> ids) const override;
  std::string_view type() const override { return "HuggingFaceTokenizer"; }
  int32_t vocab_size() const override;
  int32_t eod_id() const override;
  std::optional<int32_t> bos_id() const override;
  std::vector<SpecialToken> special_tokens() const override;  // the added tokens marked special
  const std::string& path() const;                            // the tokenizer.json read

 private:
  struct Shared;
  void encode_added(std::string_view text, bool normalized_group, bool at_start, std::vector<int32_t>& out);
  void encode_stretch(std::string_view text, bool at_start, std::vector<int32_t>& out);
  void encode_words(std::string_view text, bool at_start, std::vector<int32_t>& out);
  bool encode_whole(std::string_view piece, std::vector<int32_t>& out) const;
  std::shared_ptr<const Shared> shared_;
  std::unique_ptr<BpeCache> cache_;
  std::string prefixed_;  // scratch: a stretch with ByteLevel's prefix space
};

}  // namespace gptrain
