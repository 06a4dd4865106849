// The GPT-2 tokenizer of data/gpt2/, loaded once per test executable and shared by the test files.
#pragma once

#include "data/tokenizer/gpt2_tokenizer.h"

namespace gptrain::test {

inline GPT2Tokenizer& default_gpt2_tokenizer() {
  static GPT2Tokenizer tok = GPT2Tokenizer::load_default();
  return tok;
}

}  // namespace gptrain::test
