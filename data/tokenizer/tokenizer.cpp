// make_tokenizer: --tokenizer-type and its files -> one of the implementations. See tokenizer.h.
#include "data/tokenizer/tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/null_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/tiktoken_tokenizer.h"

namespace gptrain {

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& s) {
  const bool gpt2_files = s.vocab_file || s.merge_file;
  if (s.type == "GPT2BPETokenizer") {
    check(!s.model, "--tokenizer-model {}: not used by GPT2BPETokenizer (it takes --vocab-file and --merge-file)",
          *s.model);
    check(s.vocab_file.has_value() == s.merge_file.has_value(), "--vocab-file and --merge-file go together");
    const GPT2TokenizerOptions o{.special_tokens_as_text = s.special_tokens_as_text};
    return std::make_unique<GPT2Tokenizer>(s.vocab_file ? GPT2Tokenizer(*s.vocab_file, *s.merge_file, o)
                                                        : GPT2Tokenizer::load_default(o));
  }
  check(!s.special_tokens_as_text, "--endoftext-as-text is implemented for GPT2BPETokenizer only, not {}", s.type);
  if (s.type == "HuggingFaceTokenizer") {
    check(
        s.model.has_value(),
        "--tokenizer-type HuggingFaceTokenizer needs --tokenizer-model (a tokenizer.json or a directory holding one)");
    check(!gpt2_files, "--vocab-file/--merge-file: not used by HuggingFaceTokenizer (it reads --tokenizer-model)");
    return std::make_unique<HuggingFaceTokenizer>(*s.model);
  }
  if (s.type == "NullTokenizer") {
    check(s.vocab_size.has_value(), "--tokenizer-type NullTokenizer needs --vocab-size");
    check(!gpt2_files && !s.model, "--vocab-file/--merge-file/--tokenizer-model: not used by NullTokenizer");
    return std::make_unique<NullTokenizer>(*s.vocab_size);
  }
  if (is_sentencepiece_type(s.type)) {
    check(s.model.has_value(), "--tokenizer-type {} needs --tokenizer-model (a SentencePiece .model file)", s.type);
    check(!gpt2_files, "--vocab-file/--merge-file: not used by {} (it reads --tokenizer-model)", s.type);
    return std::make_unique<SentencePieceTokenizer>(s.type, *s.model);
  }
  if (s.type == "TikTokenizer") {
    check(s.model.has_value(),
          "--tokenizer-type TikTokenizer needs --tokenizer-model (Megatron's tiktoken .json vocabulary or a tiktoken "
          "BPE file)");
    check(!gpt2_files, "--vocab-file/--merge-file: not used by TikTokenizer (it reads --tokenizer-model)");
    const std::string pattern = s.tiktoken_pattern.value_or("v2");
    check(pattern == "v1" || pattern == "v2", "--tiktoken-pattern {}: expected v1 or v2", pattern);
    TikTokenizerOptions o;
    o.path = *s.model;
    o.pattern = pattern == "v1" ? TiktokenPattern::kV1 : TiktokenPattern::kV2;
    o.num_special_tokens = s.tiktoken_num_special_tokens;
    if (s.vocab_size) o.vocab_size = *s.vocab_size;
    if (!s.tiktoken_special_tokens.empty()) o.special_tokens = s.tiktoken_special_tokens;
    return std::make_unique<TikTokenizer>(o);
  }
  fail(
      "--tokenizer-type {}: not implemented; gptrain implements GPT2BPETokenizer, HuggingFaceTokenizer (BPE "
      "tokenizer.json), SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer, TikTokenizer and "
      "NullTokenizer",
      s.type);
}

}  // namespace gptrain
