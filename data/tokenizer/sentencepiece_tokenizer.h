// Megatron's three SentencePiece tokenizer types over one SentencePiece model file
// (--tokenizer-model file.model), encoded by the SentencePiece C++ library itself, so the ids are the
// library's for every normalizer, model type (BPE, unigram) and byte-fallback setting:
//
//   type                       vocabulary               end of document   BOS in front   special tokens in text
//   GPTSentencePieceTokenizer  the model's pieces       eos piece         no             no (text)
//   Llama2Tokenizer            the model's pieces       eos piece         yes            no (text)
//   SentencePieceTokenizer     pieces + added tokens    <EOD>             no             yes (cut out)
//
// SentencePieceTokenizer (Megatron's T5/BERT-era wrapper) adds, in this order and where the model has
// no such piece, <CLS>, <SEP>, <EOD>, <MASK>, then the pad, BOS and EOS pieces (<PAD>, <BOS>, <EOS>
// when the model has none) with ids after the model's. encode() cuts each of these tokens out of the
// text wherever it occurs (leftmost; at one position the earliest-added wins) and encodes the text
// between them separately; decode() puts each such token between spaces, as Megatron's detokenize.
// The other two pass the text to SentencePiece whole: "<s>" in text is text.
//
// Encoding: SentencePiece BPE models of the Llama-2 kind (byte fallback, no normalization rules;
// SpmBpeModel says which) are encoded natively, with the library's ids and several
// times its speed; every other model goes through the library. GPTRAIN_SPM_ENCODER=library forces the
// library, =native refuses a model the native encoder cannot take (tests use both); unset or auto picks.
// Decoding is always the library's.
//
// Text that is not valid UTF-8: SentencePiece's normalizer turns each invalid byte into U+FFFD (after
// normalization: NFKC does not touch it), encoded as its piece or, with byte fallback, as its three
// bytes EF BF BD; it decodes to U+FFFD. Python's sentencepiece, given the same bytes, does the same.
#pragma once

#include "data/tokenizer/tokenizer.h"

#include <memory>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace gptrain {

class SpmBpeEncoder;

class SentencePieceTokenizer final : public Tokenizer {
 public:
  enum class Flavor { kSentencePiece, kGPTSentencePiece, kLlama2 };
  // type: one of the three --tokenizer-type names; path: a .model file or a directory holding tokenizer.model.
  SentencePieceTokenizer(std::string_view type, const std::string& path);
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(const SentencePieceTokenizer& other);  // shares the model
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<SentencePieceTokenizer>(*this); }

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  using Tokenizer::encode;
  // SentencePiece's DecodeIds (the leading space of the text dropped, bytes that are not UTF-8 as U+FFFD).
  std::string decode(std::span<const int32_t> ids) const override;
  // The pieces' text as it continues earlier text: "▁" as a space, byte pieces as their byte, control pieces
  // as nothing (generate streams with it).
  std::string decode_continuation(std::span<const int32_t> ids) const override;
  std::string_view type() const override;
  int32_t vocab_size() const override;
  int32_t eod_id() const override;
  std::optional<int32_t> bos_id() const override;
  std::vector<SpecialToken> special_tokens() const override;

  Flavor flavor() const;
  const std::string& path() const;  // the .model file read
  int32_t piece_count() const;      // the model's own pieces (ids below it are SentencePiece's)
  const sentencepiece::SentencePieceProcessor& processor() const;
  // Whether encode() runs the native BPE encoder (else the library), and why not when it does not.
  bool native_encoder() const;
  const std::string& native_encoder_refusal() const;

 private:
  struct Shared;
  void encode_plain(std::string_view text, std::vector<int32_t>& out);
  std::shared_ptr<const Shared> shared_;
  std::vector<int> scratch_;
  std::unique_ptr<SpmBpeEncoder> native_;  // null: the library encodes
};

// Whether type is one of the three names above.
bool is_sentencepiece_type(std::string_view type);

}  // namespace gptrain
