// SentencePiece types on a model trained here with the library's C++ trainer (the Python reference
// comparison is tests/integration/spm_tokenizer_parity.sh): what each type adds around SentencePiece's ids,
// SentencePieceTokenizer's special-token split, text that is not UTF-8, decode vs decode_continuation.
#include "core/common/error.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace gptrain;
namespace fs = std::filesystem;

namespace {
// A BPE model with byte fallback, trained once per test process on a few repeated sentences; the
// directory goes at exit.
struct SpmTempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("gptrain_test_spm_{}", ::getpid());
  ~SpmTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
const std::string& tiny_model() {
  static const SpmTempDir tmp;
  static const std::string path = [] {
    const fs::path dir = tmp.path;
    fs::create_directories(dir);
    std::ofstream text(dir / "text.txt");
    for (int i = 0; i < 200; ++i)
      text << "the quick brown fox " << i << " jumps over the lazy dog\nhello world, hello there\n";
    text.close();
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        fmt::format("--input={0}/text.txt --model_prefix={0}/m --model_type=bpe --vocab_size=300 --byte_fallback=true "
                    "--minloglevel=2 --num_threads=1",
                    dir.string()));
    REQUIRE(status.ok());
    return (dir / "m.model").string();
  }();
  return path;
}
using Ids = std::vector<int32_t>;
Ids cat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TEST_CASE("sentencepiece: what each type adds to SentencePiece's ids") {
  SentencePieceTokenizer gpt("GPTSentencePieceTokenizer", tiny_model());
  SentencePieceTokenizer llama("Llama2Tokenizer", tiny_model());
  const Ids plain = gpt.encode("hello world");
  REQUIRE(!plain.empty());
  CHECK(gpt.vocab_size() == 300);
  CHECK(gpt.eod_id() == 2);  // the eos piece
  CHECK(llama.encode("hello world") == cat({1}, plain));
  CHECK(llama.encode("") == Ids{1});  // Megatron keeps the BOS-only document
  CHECK(gpt.encode("").empty());
  CHECK(gpt.encode("<s>") != Ids{1});  // control pieces are text to SentencePiece
  CHECK(gpt.clone()->encode("hello world") == plain);

  SentencePieceTokenizer sp("SentencePieceTokenizer", tiny_model());
  // <CLS> <SEP> <EOD> <MASK> <PAD> after the 300 pieces; <s> and </s> are the model's.
  CHECK(sp.vocab_size() == 305);
  CHECK(sp.eod_id() == 302);
  CHECK(sp.bos_id() == 1);
  CHECK(sp.encode("hello<EOD>world</s>") == cat(cat(gpt.encode("hello"), {302}), cat(gpt.encode("world"), {2})));
  CHECK(sp.encode("<CLS><CLS>") == Ids{300, 300});
  CHECK(sp.decode(Ids{300, 302}) == " <CLS>  <EOD> ");  // Megatron's detokenize: each between spaces
}

TEST_CASE("sentencepiece: invalid UTF-8 becomes U+FFFD, decode drops the leading space, continuation keeps it") {
  SentencePieceTokenizer gpt("GPTSentencePieceTokenizer", tiny_model());
  // The invalid byte becomes U+FFFD after normalization: here its three bytes by byte fallback.
  const Ids bad = gpt.encode(
      "ab\xff"
      "cd");
  const auto& p = gpt.processor();
  const Ids fffd = {p.PieceToId("<0xEF>"), p.PieceToId("<0xBF>"), p.PieceToId("<0xBD>")};
  CHECK(std::search(bad.begin(), bad.end(), fffd.begin(), fffd.end()) != bad.end());
  CHECK(gpt.decode(gpt.encode("ab\xff"
                              "cd")) ==
        "ab\xef\xbf\xbd"
        "cd");
  const Ids ids = gpt.encode("hello world \xf0\x9f\x98\x80");  // the emoji by byte fallback
  CHECK(gpt.decode(ids) == "hello world \xf0\x9f\x98\x80");
  CHECK(gpt.decode_continuation(ids) == " hello world \xf0\x9f\x98\x80");
  CHECK_THROWS_AS(gpt.decode(Ids{300}), Error);
}

TEST_CASE("sentencepiece: refusals name the file") {
  CHECK_THROWS_WITH(SentencePieceTokenizer("Llama2Tokenizer", "/nonexistent/m.model"), Catch::Contains("no such file"));
  const fs::path dir = fs::path(tiny_model()).parent_path();
  CHECK_THROWS_WITH(SentencePieceTokenizer("Llama2Tokenizer", (dir / "text.txt").string()),
                    Catch::Contains("not a SentencePiece model"));
  CHECK_THROWS_WITH(SentencePieceTokenizer("Llama2Tokenizer", dir.string()), Catch::Contains("no tokenizer.model"));
}
