// GPT2Tokenizer and the GPT-2 pre-tokenizer against ids and pieces recorded from Hugging Face
// tokenizers 0.20.3 (ByteLevel BPE from data/gpt2/, <|endoftext|> as a special token), so the unit
// suite checks exactness without Python. The live comparison over whole corpora and every Unicode
// class boundary is tests/integration/preprocess_tokenizer_parity.sh.
#include "data/tokenizer/gpt2_pretokenizer.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "default_gpt2_tokenizer.h"

#include <catch2/catch.hpp>

using gptrain::GPT2Tokenizer;

namespace {

std::vector<int32_t> repeat(int32_t id, int n) { return std::vector<int32_t>(n, id); }

std::vector<std::string> pieces(std::string_view text) {
  std::vector<gptrain::TextPiece> p;
  gptrain::gpt2_pretokenize(text, p);
  std::vector<std::string> out;
  for (auto [b, e] : p) out.emplace_back(text.substr(b, e - b));
  return out;
}

}  // namespace

TEST_CASE("tokenizer: ids equal HF tokenizers on hard strings") {
  GPT2Tokenizer& tok = gptrain::test::default_gpt2_tokenizer();
  CHECK(tok.encode("a  b   c\n\n\nd \t\r\n e  ") ==
        std::vector<int32_t>{64, 220, 275, 220, 220, 269, 628, 198, 67, 220, 197, 201, 198, 304, 220, 220});
  CHECK(tok.encode("I'm we'll they've it's 'S O'Neil ''s") ==
        std::vector<int32_t>{40, 1101, 356, 1183, 484, 1053, 340, 338, 705, 50, 440, 6, 29354, 10148, 82});
  CHECK(tok.encode("caf\u00e9 \u4f60\u597d\uff0c\u4e16\u754c \u041f\u0440\u0438\u0432\u0435\u0442") ==
        std::vector<int32_t>{66,    1878, 2634,  220, 19526, 254, 25001, 121,   171,   120,   234,
                             10310, 244,  45911, 234, 12466, 253, 21169, 18849, 38857, 16843, 20375});
  CHECK(tok.encode("\U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469") ==
        std::vector<int32_t>{47249, 222, 41840, 235, 8582, 237, 121, 50169, 101, 447, 235, 41840, 102});
  CHECK(tok.encode("\u0085x \u0085 \ufeffy\u00a0z \u3000w") ==
        std::vector<int32_t>{126, 227, 87, 1587, 227, 27332, 119, 123, 88, 1849, 89, 220, 5099, 222, 86});
  CHECK(tok.encode("\u216b \u00bd 123456 \u0663\u0664 3.14") ==
        std::vector<int32_t>{158, 227, 104, 25208, 17031, 29228, 18923, 96, 149, 97, 513, 13, 1415});
  CHECK(tok.encode("a<|endoftext|> b<|endoftext|>") == std::vector<int32_t>{64, 50256, 275, 50256});
  std::vector<int32_t> long_want{23926, 50155};
  auto spaces = repeat(220, 59);
  long_want.insert(long_want.end(), spaces.begin(), spaces.end());
  long_want.push_back(2124);
  CHECK(tok.encode(std::string(70, '=') + std::string(60, ' ') + "x") == long_want);
}

TEST_CASE("tokenizer: pre-tokenizer pieces follow the GPT-2 regex") {
  // HF ByteLevel pieces of this string: 'a' 'Ġ' 'Ġb' 'ĊĊ' 'Ġc' "'s" 'ĠĠ' 'Âł' 'd' 'Ġ12' 'x' '!!' 'ĠĠ'
  CHECK(pieces("a  b\n\n c's  \u00a0d 12x!!  ") ==
        std::vector<std::string>{"a", " ", " b", "\n\n", " c", "'s", "  ", "\u00a0", "d", " 12", "x", "!!", "  "});
  CHECK(pieces("").empty());
  CHECK(pieces(" ") == std::vector<std::string>{" "});
  CHECK(pieces("x \n") == std::vector<std::string>{"x", " \n"});
  CHECK(pieces("'re'll'x") == std::vector<std::string>{"'re", "'ll", "'", "x"});
}

TEST_CASE("tokenizer: copies share the tables and give the same ids") {
  GPT2Tokenizer copy(gptrain::test::default_gpt2_tokenizer());
  const std::string text = "The quick brown fox \u2014 jumps over 13 lazy dogs.\n";
  CHECK(copy.encode(text) == gptrain::test::default_gpt2_tokenizer().encode(text));
  CHECK(copy.encode(text) == copy.encode(text));  // second time from the cache
  GPT2Tokenizer tiny_cache(gptrain::default_gpt2_vocab_path(), gptrain::default_gpt2_merges_path(),
                           {.special_tokens_as_text = false, .cache_capacity = 1});
  std::string many;
  for (int i = 0; i < 200; ++i) many += " word" + std::to_string(i);
  CHECK(tiny_cache.encode(many) == gptrain::test::default_gpt2_tokenizer().encode(many));  // cache cleared repeatedly
}
