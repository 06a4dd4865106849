// make_tokenizer: --tokenizer-type and its files -> one of the implementations. See tokenizer.h.
#include "data/tokenizer/tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/null_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"

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
  fail(
      "--tokenizer-type {}: not implemented; gptrain implements GPT2BPETokenizer, HuggingFaceTokenizer (byte-level "
      "BPE tokenizer.json), SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer and NullTokenizer "
      "(TikTokenizer and the other types are not implemented yet)",
      s.type);
}

}  // namespace gptrain
