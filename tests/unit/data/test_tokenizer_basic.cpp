// GPT2Tokenizer on fixed strings whose ids were taken from Hugging Face tokenizers 0.20.3
// (ByteLevel BPE from data/gpt2/); the full parity test against the live reference is
// tests/integration/preprocess_tokenizer_parity.sh.
#include "core/common/error.h"
#include "data/tokenizer/gpt2_tokenizer.h"

#include <catch2/catch.hpp>

using gptrain::GPT2Tokenizer;

namespace {
GPT2Tokenizer& tokenizer() {
  static GPT2Tokenizer tok = GPT2Tokenizer::load_default();
  return tok;
}
}  // namespace

TEST_CASE("tokenizer: GPT-2 ids of fixed strings") {
  GPT2Tokenizer& tok = tokenizer();
  CHECK(tok.vocab_size() == 50257);
  CHECK(tok.eod_id() == 50256);
  CHECK(tok.encode("Hello world") == std::vector<int32_t>{15496, 995});
  CHECK(tok.encode("<|endoftext|>") == std::vector<int32_t>{50256});
  CHECK(tok.encode("").empty());
}

TEST_CASE("tokenizer: <|endoftext|> as text when asked") {
  GPT2Tokenizer plain = GPT2Tokenizer::load_default({.special_tokens_as_text = true});
  const auto ids = plain.encode("a<|endoftext|>b");
  CHECK(std::find(ids.begin(), ids.end(), 50256) == ids.end());
  CHECK(plain.decode(ids) == "a<|endoftext|>b");
}

TEST_CASE("tokenizer: decode inverts encode, invalid UTF-8 included") {
  GPT2Tokenizer& tok = tokenizer();
  for (std::string s : {std::string("  multiple   spaces\n\n\nand\r\nlines \u0085 \uFEFF"),
                        std::string("caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87 123,456.78 don't I'LL"),
                        std::string("\xFF\xFE broken \xC3 utf8 \xED\xA0\x80 surrogate"),
                        std::string(1000, '=') + std::string(300, ' ') + "x"}) {
    CHECK(tok.decode(tok.encode(s)) == s);
  }
  CHECK_THROWS_AS(tok.decode(std::vector<int32_t>{50257}), gptrain::Error);
}

TEST_CASE("tokenizer: missing or invalid files give clear errors") {
  CHECK_THROWS_WITH(GPT2Tokenizer("/nonexistent/vocab.json", gptrain::default_gpt2_merges_path()),
                    Catch::Contains("cannot open vocab.json"));
  CHECK_THROWS_WITH(GPT2Tokenizer(gptrain::default_gpt2_merges_path(), gptrain::default_gpt2_merges_path()),
                    Catch::Contains("not valid JSON"));
}
