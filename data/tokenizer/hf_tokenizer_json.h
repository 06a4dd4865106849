// Reading a Hugging Face tokenizer.json into the tables HuggingFaceTokenizer runs on. Implemented:
//   model          BPE (vocab; merges as "a b" strings or ["a", "b"] pairs; ignore_merges), byte_fallback false
//   normalizer     null
//   pre_tokenizer  ByteLevel (add_prefix_space, use_regex: GPT-2's regex), or a Sequence of one Split
//                  (a known regex, behavior Isolated) and ByteLevel with use_regex false (NeoX/Llama-3/Qwen2)
//   post_processor null, ByteLevel, TemplateProcessing (special ids around the sequence, e.g. Llama-3's
//                  BOS), or a Sequence of them
//   decoder        ByteLevel
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
  kNone,    // ByteLevel(use_regex=false) alone: the whole text is one piece
  kGpt2,    // GPT-2's regex (ByteLevel's own, or the same pattern in a Split)
  kLlama3,  // Llama-3's regex (\p{N}{1,3}); max_digits 1 is Qwen2's \p{N}
};

struct HfAddedToken {
  std::string content;  // as written in the file (matched in the text byte for byte)
  int32_t id;
  bool special;
  bool normalized;
};

struct HfTokenizerTables {
  std::string path;                                      // the tokenizer.json read
  std::vector<std::string> tokens;                       // (V,) raw bytes of every id, added tokens included
  int32_t byte_tokens[256] = {};                         // id of each single byte
  std::vector<BpeModel::MergeIds> merges;                // rank order
  bool ignore_merges = false;                            // a piece that is itself in the vocabulary is one token
  std::unordered_map<std::string, int32_t> model_vocab;  // raw bytes -> id (filled with ignore_merges only)
  std::vector<HfAddedToken> added;
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
