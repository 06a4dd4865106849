// The tokenizer flags as the data library's factory takes them (data/tokenizer/tokenizer.h).
#pragma once

#include "core/config/model_args.h"
#include "data/tokenizer/tokenizer.h"

namespace gptrain {

// names plus the flags that pick and load a tokenizer, for the apps that bind a part of pretrain_gpt's table.
inline std::vector<std::string> with_tokenizer_flags(std::vector<std::string> names) {
  for (const char* f : {"tokenizer-type", "vocab-file", "merge-file", "tokenizer-model", "vocab-size",
                        "tiktoken-pattern", "tiktoken-num-special-tokens", "tiktoken-special-tokens"})
    names.emplace_back(f);
  return names;
}

inline TokenizerSpec tokenizer_spec(const TokenizerArgs& a, bool special_tokens_as_text = false) {
  return {a.tokenizer_type,
          a.vocab_file,
          a.merge_file,
          a.tokenizer_model,
          a.vocab_size,
          special_tokens_as_text,
          a.tiktoken_pattern,
          a.tiktoken_num_special_tokens,
          a.tiktoken_special_tokens};
}

}  // namespace gptrain
