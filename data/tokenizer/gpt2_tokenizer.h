// GPT-2 byte-level BPE, id-for-id equal to Hugging Face `tokenizers` (ByteLevel pre-tokenizer with
// GPT-2's split regex, BPE over merges.txt ranks) and to OpenAI's encoder.py.
//
// encode(text):
//   1. `<|endoftext|>` occurrences become id 50256 (as Megatron's HF-backed GPT2BPETokenizer does),
//      unless the tokenizer was built with special_tokens_as_text; the text between them goes on.
//   2. The GPT-2 pre-tokenizer (gpt2_pretokenizer.h) cuts the text into pieces.
//   3. Each piece's UTF-8 bytes start as single-byte tokens; the adjacent pair with the lowest merge
//      rank is merged until no pair is in merges.txt (bpe_model.h). Results per piece are cached.
// decode(ids) concatenates the tokens' bytes: decode(encode(s)) == s for every byte string s (invalid
// UTF-8 included: such bytes are pre-tokenized as "other" characters and still round-trip).
//
// Threads: the vocabulary and merges are immutable and shared between copies; the piece cache is
// per object. Use one GPT2Tokenizer per thread (copying one is cheap: it shares the tables and starts
// with an empty cache). encode() is non-const because it fills the cache; decode() is const.
#pragma once

#include "data/tokenizer/tokenizer.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

class BpeModel;
class BpeCache;

struct GPT2TokenizerOptions {
  // Treat "<|endoftext|>" in text as ordinary characters instead of the EOD id.
  bool special_tokens_as_text = false;
  // Pieces remembered by the cache before it is cleared (bounds memory on unbounded input).
  size_t cache_capacity = 1 << 16;
};

class GPT2Tokenizer final : public Tokenizer {
 public:
  // Loads vocab.json and merges.txt; any problem (missing file, bad JSON, a merge naming unknown
  // tokens, missing byte tokens, no <|endoftext|>) throws gptrain::Error naming the file and line.
  GPT2Tokenizer(const std::string& vocab_json_path, const std::string& merges_txt_path,
                GPT2TokenizerOptions options = {});
  // Loads the GPT-2 files shipped in the source tree (default_gpt2_vocab_path/merges_path).
  static GPT2Tokenizer load_default(GPT2TokenizerOptions options = {});

  GPT2Tokenizer(const GPT2Tokenizer& other);
  GPT2Tokenizer& operator=(const GPT2Tokenizer& other);
  GPT2Tokenizer(GPT2Tokenizer&&) noexcept;
  GPT2Tokenizer& operator=(GPT2Tokenizer&&) noexcept;
  ~GPT2Tokenizer() override;
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<GPT2Tokenizer>(*this); }

  // Appends the ids of text to out (no allocation per call once out and the cache are warm).
  void encode(std::string_view text, std::vector<int32_t>& out) override;
  using Tokenizer::encode;
  // The bytes of the tokens, concatenated. Throws on an id outside [0, vocab_size()).
  std::string decode(std::span<const int32_t> ids) const override;
  // The bytes of one token.
  std::string_view token_bytes(int32_t id) const;

  std::string_view type() const override { return "GPT2BPETokenizer"; }
  int32_t vocab_size() const override;  // 50257 for GPT-2
  int32_t eod_id() const override;      // id of <|endoftext|>: 50256 for GPT-2
  std::vector<SpecialToken> special_tokens() const override { return {{"<|endoftext|>", eod_id()}}; }
  const GPT2TokenizerOptions& options() const { return options_; }

 private:
  std::shared_ptr<const BpeModel> model_;
  std::unique_ptr<BpeCache> cache_;
  GPT2TokenizerOptions options_;
};

// Paths of the GPT-2 vocab.json / merges.txt committed in <source>/data/gpt2/. The source root is the
// directory the build was configured from; the environment variable GPTRAIN_SRC, when set, overrides it
// (for a build moved away from its source tree).
std::string default_gpt2_vocab_path();
std::string default_gpt2_merges_path();

}  // namespace gptrain
