// Reading a Hugging Face tokenizer.json into the tables HuggingFaceTokenizer runs on. Two families:
// byte-level BPE (GPT-2/NeoX/Llama-3/Qwen2: the vocabulary spelled in GPT-2's byte alphabet) and
// SentencePiece-converted BPE (Llama-2/Mistral/Mixtral: tokens are UTF-8 text with U+2581 for a space,
// byte fallback to <0xNN> tokens). Implemented:
//   model          BPE (vocab; merges as "a b" strings or ["a", "b"] pairs; ignore_merges); byte_fallback,
//                  unk_token and fuse_unk when the pre-tokenizer is not ByteLevel
//   normalizer     null, NFC, Prepend, Replace with a String pattern, or a Sequence of them
//   pre_tokenizer  ByteLevel (add_prefix_space, use_regex: GPT-2's regex), or a Sequence of one Split
//                  (a known regex: GPT-2, Llama-3, Qwen2, Megatron tiktoken v1/v2; behavior Isolated) and
//                  ByteLevel with use_regex false;
//                  Metaspace (replacement, prepend_scheme first/always/never, split); null (the whole
//                  normalized text is one word, Llama-2's legacy files)
//   post_processor null, ByteLevel, TemplateProcessing (special ids around the sequence, e.g. Llama-3's
//                  BOS), or a Sequence of them
//   decoder        ByteLevel; or Replace (String), ByteFallback, Fuse, Strip, Metaspace, and Sequences of them
//   added_tokens   special or not, normalized or not; lstrip/rstrip/single_word false
// Anything else is refused with an error naming the component and the file. The end-of-document and
// beginning-of-sequence tokens come from tokenizer_config.json's eos_token/bos_token when that file sits
// next to tokenizer.json, else the EOD is the first added special token among <|endoftext|>,
// <|end_of_text|>, </s>, <eos>, and the BOS is the template's first special token.
#pragma once

#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/tokenizer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gptrain {

// How the text between added tokens is cut into pieces before BPE.
enum class HfSplitRegex {
  kNone,        // ByteLevel(use_regex=false) alone: the whole text is one piece
  kGpt2,        // GPT-2's regex (ByteLevel's own, or the same pattern in a Split)
  kLlama3,      // Llama-3's regex (\p{N}{1,3}); max_digits 1 is Qwen2's \p{N}
  kTiktokenV1,  // Megatron's TikTokenizer patterns (tiktoken_pretokenizer.h), as convert_to_hf writes them
  kTiktokenV2,
};

struct HfAddedToken {
  std::string content;  // as written in the file (matched in the text byte for byte)
  int32_t id;
  bool special;
  bool normalized;
};

// A normalizer step (Prepend: `text` in front of non-empty text; Replace: every `from` by `text`; NFC).
struct HfNormalizerStep {
  enum Kind { kPrepend, kReplace, kNfc } kind;
  std::string from, text;
};

// A decoder step of the SentencePiece family, applied to the token strings in order (Hugging Face's
// decode_chain): Replace `from` by `text` in each; ByteFallback turns <0xNN> tokens into their bytes;
// Fuse joins all tokens into one; Strip removes up to `start` leading and `stop` trailing `text`
// characters of each; Metaspace replaces `from` by a space and drops the first token's leading space
// when `prepend` is set.
struct HfDecoderStep {
  enum Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
  std::string from, text;
  int start = 0, stop = 0;
  bool prepend = false;
};

// The Metaspace pre-tokenizer: spaces become `replacement`, which is put in front of the text (always,
// or only at the start of the input: first, or never), and with split every replacement starts a piece.
struct HfMetaspace {
  std::string replacement = "\xE2\x96\x81";  // U+2581
  enum Prepend { kAlways, kFirst, kNever } prepend = kAlways;
  bool split = true;
};

struct HfTokenizerTables {
  std::string path;                                      // the tokenizer.json read
  bool byte_level = true;                                // false: the SentencePiece family (tokens are text)
  std::vector<std::string> tokens;                       // (V,) raw bytes of every id, added tokens included
  int32_t byte_tokens[256] = {};                         // id of each single byte
  std::vector<BpeModel::MergeIds> merges;                // rank order
  bool ignore_merges = false;                            // a piece that is itself in the vocabulary is one token
  std::unordered_map<std::string, int32_t> model_vocab;  // raw bytes -> id (filled with ignore_merges only)
  std::vector<HfAddedToken> added;
  // SentencePiece family: token text -> id for the initial symbols, <0xNN> ids (-1: none), unknown token.
  std::unordered_map<std::string, int32_t> char_vocab;
  int32_t byte_fallback_ids[256] = {};
  bool byte_fallback = false;
  int32_t unk_id = -1;
  bool fuse_unk = false;
  std::vector<HfNormalizerStep> normalizers;
  std::optional<HfMetaspace> metaspace;  // set: the Metaspace pre-tokenizer
  std::vector<HfDecoderStep> decoders;   // SentencePiece family only
  HfSplitRegex split = HfSplitRegex::kGpt2;
  int max_digits = 3;
  bool add_prefix_space = false;                // ByteLevel: a space in front of text that has none
  std::vector<int32_t> prefix_ids, suffix_ids;  // TemplateProcessing's single-sequence ids around the text
  int32_t eod_id = -1;
  std::optional<int32_t> bos_id;
};

// file_or_dir: a tokenizer.json, or a directory holding one. Throws gptrain::Error on anything refused.
HfTokenizerTables load_hf_tokenizer_json(const std::string& file_or_dir);

}  // namespace gptrain
