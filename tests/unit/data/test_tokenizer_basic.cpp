// GPT2Tokenizer on fixed strings whose ids were taken from Hugging Face tokenizers 0.20.3
// (ByteLevel BPE from data/gpt2/); the full parity test against the live reference is
// tests/integration/preprocess_tokenizer_parity.sh.
#include "core/common/error.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "default_gpt2_tokenizer.h"

#include "../core/scratch_dir.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

using gptrain::GPT2Tokenizer;

TEST_CASE("tokenizer: GPT-2 ids of fixed strings") {
  GPT2Tokenizer& tok = gptrain::test::default_gpt2_tokenizer();
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
  GPT2Tokenizer& tok = gptrain::test::default_gpt2_tokenizer();
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

TEST_CASE("tokenizer: merges.txt with a blank or repeated line is refused naming the line") {
  const gptrain::test::ScratchDir scratch("merges");
  const auto dir = scratch.fresh("m");
  auto load = [&](const std::string& text) {
    const std::string path = (dir / "merges.txt").string();
    std::ofstream(path, std::ios::binary) << text;
    return [path] { GPT2Tokenizer(gptrain::default_gpt2_vocab_path(), path); };
  };
  // The first merges of GPT-2's own file.
  const std::string head = "#version: 0.2\n\u0120 t\n\u0120 a\nh e\n";
  CHECK_NOTHROW(load(head)());
  CHECK_NOTHROW(load("\u0120 t\r\n\u0120 a\r\n")());  // CRLF, no header
  CHECK_THROWS_WITH(load(head + "\nx y\n")(), Catch::Contains("merges.txt:5: blank line"));
  CHECK_THROWS_WITH(load(head + "\n")(), Catch::Contains("merges.txt:5: blank line"));
  CHECK_THROWS_WITH(load(head + "\u0120 a\n")(), Catch::Contains("merges.txt:5: merge \"\u0120 a\" repeats line 3"));
  scratch.remove();
}
