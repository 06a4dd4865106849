// The tokenizer flags as the data library's factory takes them (data/tokenizer/tokenizer.h).
#pragma once

#include "core/config/model_args.h"
#include "data/tokenizer/tokenizer.h"

namespace gptrain {

inline TokenizerSpec tokenizer_spec(const TokenizerArgs& a, bool special_tokens_as_text = false) {
  return {a.tokenizer_type, a.vocab_file, a.merge_file, a.tokenizer_model, a.vocab_size, special_tokens_as_text};
}

}  // namespace gptrain
