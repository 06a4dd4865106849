// The tokenizer factory and the pieces without a Python reference at run time: the Llama-3 split
// scanner on strings whose pieces were taken from Hugging Face tokenizers 0.20.3's Split pre-tokenizer
// (the live comparison is tests/integration/hf_tokenizer_parity.sh), NullTokenizer, and refusals.
#include "core/common/error.h"
#include "data/tokenizer/llama3_pretokenizer.h"
#include "data/tokenizer/null_tokenizer.h"
#include "data/tokenizer/tokenizer.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gptrain;

namespace {
std::vector<std::string> llama3_pieces(std::string_view text, int max_digits = 3) {
  std::vector<TextPiece> pieces;
  llama3_pretokenize(text, max_digits, pieces);
  std::vector<std::string> out;
  for (const TextPiece& p : pieces) out.emplace_back(text.substr(p.begin, p.end - p.begin));
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST_CASE("tokenizer: Llama-3 split pieces equal Hugging Face's") {
  CHECK(llama3_pieces("I'M '\xC5\xBF x") == V{"I", "'M", " '", "\xC5\xBF", " x"});
  CHECK(llama3_pieces("a'\xC5\xBFx") == V{"a", "'\xC5\xBF", "x"});  // U+017F folds to s: a contraction
  CHECK(llama3_pieces("a'Ss") == V{"a", "'S", "s"});
  CHECK(llama3_pieces("a'K") == V{"a", "'K"});  // not a contraction: an apostrophe in front of letters
  CHECK(llama3_pieces("\tword  \n\n  x") == V{"\tword", "  \n\n", " ", " x"});
  CHECK(llama3_pieces(" 1234567 a12") == V{" ", "123", "456", "7", " a", "12"});
  CHECK(llama3_pieces("!!\n\nfoo  ") == V{"!!\n\n", "foo", "  "});
  CHECK(llama3_pieces(" ?x,y \r\n") == V{" ?", "x", ",y", " \r\n"});
  CHECK(llama3_pieces("1234", 1) == V{"1", "2", "3", "4"});  // Qwen2's \p{N}
  CHECK(llama3_pieces("").empty());
}

TEST_CASE("tokenizer: NullTokenizer reads space-separated ids") {
  NullTokenizer tok(10);
  CHECK(tok.vocab_size() == 11);
  CHECK(tok.eod_id() == 10);
  CHECK(tok.encode("3 1 4 10") == std::vector<int32_t>{3, 1, 4, 10});
  CHECK(tok.decode(std::vector<int32_t>{3, 1, 4}) == "3 1 4");
  CHECK_THROWS_AS(tok.encode("3  1"), Error);
  CHECK_THROWS_AS(tok.encode("11"), Error);
  CHECK_THROWS_AS(tok.encode("x"), Error);
}

TEST_CASE("tokenizer: the factory refuses what it does not implement, naming it") {
  auto message = [](const TokenizerSpec& s) {
    try {
      make_tokenizer(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto spec = [](const char* type, std::optional<std::string> model = std::nullopt) {
    TokenizerSpec s;
    s.type = type;
    s.model = std::move(model);
    return s;
  };
  CHECK_THAT(message(spec("BertWordPieceCase")), Catch::Contains("BertWordPieceCase: not implemented"));
  CHECK_THAT(message(spec("Llama2Tokenizer")), Catch::Contains("needs --tokenizer-model"));
  CHECK_THAT(message(spec("GPTSentencePieceTokenizer", "/nonexistent.model")), Catch::Contains("no such file"));
  CHECK_THAT(message(spec("HuggingFaceTokenizer")), Catch::Contains("needs --tokenizer-model"));
  CHECK_THAT(message(spec("HuggingFaceTokenizer", "/nonexistent/dir")), Catch::Contains("no tokenizer.json there"));
  CHECK_THAT(message(spec("NullTokenizer")), Catch::Contains("needs --vocab-size"));
  CHECK_THAT(message(spec("GPT2BPETokenizer", "x.json")), Catch::Contains("not used by GPT2BPETokenizer"));
  const auto gpt2 = make_tokenizer(TokenizerSpec{});
  CHECK(gpt2->type() == "GPT2BPETokenizer");
  CHECK(gpt2->eod_id() == 50256);
  CHECK(gpt2->clone()->encode("Hello world") == std::vector<int32_t>{15496, 995});
}
