// TikTokenizer's parts without a Python reference at run time: the v1/v2 split pieces on strings whose
// pieces were taken from the `regex` module with Megatron's patterns (the live comparison with tiktoken is
// tests/integration/tiktoken_parity.sh), base64, the rank BPE's merge order, and the tokenizer on a
// tiny vocabulary file.
#include "core/common/error.h"
#include "data/tokenizer/rank_bpe.h"
#include "data/tokenizer/tiktoken_pretokenizer.h"
#include "data/tokenizer/tiktoken_tokenizer.h"
#include "data/tokenizer/tiktoken_vocab_file.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace gptrain;

namespace {
using V = std::vector<std::string>;
V pieces(std::string_view text, TiktokenPattern p) {
  std::vector<TextPiece> out;
  tiktoken_pretokenize(text, p, out);
  V s;
  for (const TextPiece& x : out) s.emplace_back(text.substr(x.begin, x.end - x.begin));
  return s;
}
}  // namespace

TEST_CASE("tokenizer: tiktoken v1/v2 split pieces equal the regex's") {
  using P = TiktokenPattern;
  CHECK(pieces("HELLOworld helloWorld", P::kV2) == V{"HELLOworld", " hello", "World"});
  CHECK(pieces("HELLOworld helloWorld", P::kV1) == V{"HELLOworld", " helloWorld"});
  CHECK(pieces(" ABC\tDef", P::kV2) == V{" ABC", "\tDef"});
  CHECK(pieces("x\u0301\u0301 .\u0301a", P::kV2) == V{"x\u0301\u0301", " .\u0301", "a"});
  CHECK(pieces("x\u0301\u0301 .\u0301a", P::kV1) == V{"x", "\u0301\u0301", " .\u0301", "a"});
  CHECK(pieces("a//b\n\n//c/", P::kV2) == V{"a", "//", "b", "\n\n", "//", "c", "/"});
  CHECK(pieces("e\u0301 12 \u01C5ungla", P::kV2) == V{"e\u0301", " ", "1", "2", " \u01C5ungla"});
  CHECK(pieces("  \n  x", P::kV2) == V{"  \n", " ", " x"});
  CHECK(pieces("don't", P::kV1) == V{"don", "'t"});  // no contractions in v1
}

TEST_CASE("tokenizer: base64 decoding") {
  std::string out;
  CHECK((decode_base64("aGk=", out) && out == "hi"));
  CHECK((decode_base64("aGkh", out) && out == "hi!"));
  CHECK((decode_base64("aA==", out) && out == "h"));
  CHECK_FALSE(decode_base64("aGk", out));
  CHECK_FALSE(decode_base64("a=k=", out));
  CHECK_FALSE(decode_base64("aG!h", out));
}

TEST_CASE("tokenizer: rank BPE merges any adjacent parts that form a token, lowest rank first") {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* t : {"bc", "ab", "abc", "aa", "aaa"}) tokens.emplace_back(t);  // ranks 256..260
  const RankBpe bpe(tokens, 10);
  auto enc = [&](std::string_view s) {
    std::vector<int32_t> out;
    bpe.encode_piece(s, out);
    return out;
  };
  CHECK(enc("abc") == std::vector<int32_t>{268});  // the whole piece is a token
  // "abcd": bc (256) first, then a+bc = abc (258) although "abc" was made from ab+c in training.
  CHECK(enc("abcd") == std::vector<int32_t>{268, 10 + 'd'});
  // "aaaa": aa at 0 (leftmost of equal ranks), aa at 2, then aa+aa is no token: [aa, aa].
  CHECK(enc("aaaa") == std::vector<int32_t>{269, 269});
  std::string long_piece(300, 'a');  // the heap path agrees with the short path
  const std::vector<int32_t> l = enc(long_piece);
  CHECK(l == std::vector<int32_t>(150, 269));
}

TEST_CASE("tokenizer: rank BPE's merge for each token, for a tokenizer.json") {
  using P = std::vector<std::string_view>;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  // ranks 256..261; "xyz" has no merge of two lower ranks: x, y, z stay apart below its rank.
  for (const char* t : {"bc", "ab", "abc", "aa", "aaa", "xyz"}) tokens.emplace_back(t);
  const RankBpe bpe(tokens, 0);
  CHECK(bpe.parts_below(256) == P{"b", "c"});
  CHECK(bpe.parts_below(258) == P{"a", "bc"});  // bc (256) joins before ab (257), as encode would
  CHECK(bpe.parts_below(260) == P{"aa", "a"});  // leftmost of equal ranks
  CHECK(bpe.parts_below(261) == P{"x", "y", "z"});
  CHECK(bpe.parts_below('q') == P{"q"});
}

TEST_CASE("tokenizer: TikTokenizer special tokens take the first ids") {
  const auto dir = std::filesystem::temp_directory_path() / "gptrain_tiktoken_unit";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "v.tiktoken").string();
  {
    std::ofstream f(path);
    for (int b = 0; b < 256; ++b) {
      std::string one(1, static_cast<char>(b)), enc;
      static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      const auto v = static_cast<unsigned char>(b);
      enc = {k[v >> 2], k[(v & 3) << 4], '=', '='};
      f << enc << " " << b << "\n";
    }
    f << "aGk= 256\n";  // "hi"
  }
  TikTokenizerOptions o;
  o.path = path;
  o.vocab_size = 10 + 257;
  o.num_special_tokens = 10;
  TikTokenizer tok(o);
  CHECK(tok.vocab_size() == 267);
  CHECK(tok.eod_id() == 2);
  CHECK(tok.bos_id() == 1);
  CHECK(tok.encode("<s>hi</s><SPECIAL_9><SPECIAL_10>") ==
        std::vector<int32_t>{1, 266, 2, 9, 10 + '<', 10 + 'S', 10 + 'P', 10 + 'E', 10 + 'C', 10 + 'I', 10 + 'A',
                             10 + 'L', 10 + '_', 10 + '1', 10 + '0', 10 + '>'});
  CHECK(tok.decode(std::vector<int32_t>{1, 266, 2}) == "<s>hi</s>");
  o.vocab_size = 10 + 258;  // one more id than the file has
  CHECK_THROWS_WITH(TikTokenizer(o), Catch::Contains("fewer than the 258"));
  std::filesystem::remove_all(dir);
}
