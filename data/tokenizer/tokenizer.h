// The one tokenizer interface the apps use, and the factory that picks an implementation from
// Megatron's --tokenizer-type (+ its files):
//   GPT2BPETokenizer      gpt2_tokenizer.h   GPT-2 byte-level BPE from vocab.json + merges.txt
//   HuggingFaceTokenizer  hf_tokenizer.h     BPE (byte-level or SentencePiece-style) from a tokenizer.json
//   NullTokenizer         null_tokenizer.h   text is space-separated ids already (Megatron's)
//   SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer
//                         sentencepiece_tokenizer.h   a SentencePiece .model, through the SentencePiece library
//   TikTokenizer          tiktoken_tokenizer.h  tiktoken ranks (Megatron's JSON or a .tiktoken file), v1/v2 split
// Every other type is refused with a message naming the implemented ones.
//
// Threads: an object is used by one thread at a time (encode fills a per-object cache); clone() gives
// another one that shares the immutable tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

struct SpecialToken {
  std::string content;
  int32_t id;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::unique_ptr<Tokenizer> clone() const = 0;

  // Appends the ids of text (any bytes) to out, special tokens and post-processing (e.g. a BOS id in
  // front) included, as Megatron's tokenize() does.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) = 0;
  std::vector<int32_t> encode(std::string_view text) {
    std::vector<int32_t> out;
    encode(text, out);
    return out;
  }
  // The bytes of the tokens, concatenated (special tokens as their text). Throws on an id outside
  // [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // The same bytes as they continue earlier text (generate streams with it); differs from decode where a
  // tokenizer drops something at the start of a text (SentencePiece's leading space).
  virtual std::string decode_continuation(std::span<const int32_t> ids) const { return decode(ids); }

  virtual std::string_view type() const = 0;  // the --tokenizer-type name
  virtual int32_t vocab_size() const = 0;     // ids are 0 .. vocab_size()-1 (unpadded)
  virtual int32_t eod_id() const = 0;         // end of document (--append-eod, generate's stop)
  virtual std::optional<int32_t> bos_id() const { return std::nullopt; }
  virtual std::vector<SpecialToken> special_tokens() const { return {}; }
};

// What picks and loads a tokenizer: the --tokenizer-type flag family.
struct TokenizerSpec {
  std::string type = "GPT2BPETokenizer";
  std::optional<std::string> vocab_file, merge_file;  // GPT2BPETokenizer (default: data/gpt2/)
  std::optional<std::string> model;                   // --tokenizer-model: tokenizer.json / .model file or directory
  std::optional<int> vocab_size;                      // --vocab-size: NullTokenizer's ids
  bool special_tokens_as_text = false;                // GPT2BPETokenizer: "<|endoftext|>" stays text
  // TikTokenizer: --tiktoken-pattern (v1 or v2; none: v2, as megatron/core), --tiktoken-num-special-tokens,
  // --tokenizer-special-tokens / --tiktoken-special-tokens (empty: Megatron's default list).
  std::optional<std::string> tiktoken_pattern;
  int tiktoken_num_special_tokens = 1000;
  std::vector<std::string> tiktoken_special_tokens;
};

// Loads the tokenizer; a wrong combination of flags or a bad file throws gptrain::Error naming it.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& spec);

}  // namespace gptrain
