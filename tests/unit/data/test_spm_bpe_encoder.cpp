// The native SentencePiece BPE encoder against the library it replaces: models trained here with the
// library's C++ trainer in the configurations the native path takes (Llama-2's options; extra white
// space removed; no dummy prefix; user-defined pieces; pieces across spaces, so fewer chunk cuts), every
// id equal to SentencePiece's own Encode on hard and random text (white-space runs, "▁" in the text,
// invalid UTF-8, surrogates, overlong forms, NUL, emoji, unseen scripts). Models it must not take stay
// with the library.
#include "data/tokenizer/sentencepiece_model_proto.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

using namespace gptrain;
namespace fs = std::filesystem;

namespace {

struct SpmBpeTempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("gptrain_test_spm_bpe_{}", ::getpid());
  SpmBpeTempDir() { fs::create_directories(path); }
  ~SpmBpeTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
const SpmBpeTempDir& tmp() {
  static const SpmBpeTempDir t;
  return t;
}

// Training text: prose with white-space runs, digits, code-like indentation and a few scripts.
const std::string& corpus() {
  static const std::string path = [] {
    const fs::path p = tmp().path / "text.txt";
    std::ofstream f(p);
    const char* lines[] = {
        "The quick brown fox jumps over the lazy dog.  Twice  the  spaces here.",
        "    def encode(self, text):  return self.model.encode(text)  # four-space indent",
        "Numbers 1234567890 and 3.14159, dates 2026-11-25; prices $12.50.",
        "Grüße aus Köln, café crème, naïve façade.  Ελληνικά κείμενο.  Русский текст тоже.",
        "中文文本没有空格分词。日本語のテキストもあります。",
        "hello world, hello there, hello again and again and again",
        "\ttabs\tand\nnewlines\n\nmixed in   with   runs   of   spaces",
    };
    for (int i = 0; i < 300; ++i) f << lines[i % std::size(lines)] << " " << i << "\n";
    return p.string();
  }();
  return path;
}

// Trains (once per name) a model: by default BPE with byte fallback and identity normalization, then flags.
constexpr const char* kNativeKind = "--model_type=bpe --byte_fallback=true --normalization_rule_name=identity";
std::string train(const std::string& name, const std::string& flags, const char* kind = kNativeKind) {
  const std::string prefix = (tmp().path / name).string();
  if (!fs::exists(prefix + ".model")) {
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        fmt::format("--input={} --model_prefix={} --vocab_size=600 --hard_vocab_limit=false --character_coverage=0.99 "
                    "--minloglevel=2 --num_threads=1 {} {}",
                    corpus(), prefix, kind, flags));
    REQUIRE(status.ok());
  }
  return prefix + ".model";
}

// A copy of model with NORMAL pieces added after the others (score 0, above every trained piece): the
// ModelProto with more repeated `pieces` fields appended, which protobuf reads as later elements.
std::string with_pieces(const std::string& model, const std::vector<std::string>& pieces, const std::string& name) {
  std::ifstream in(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& p : pieces) {
    REQUIRE(p.size() < 100);  // one-byte lengths
    std::string sub;
    sub.push_back('\x0a');  // field 1 (piece), length-delimited
    sub.push_back(static_cast<char>(p.size()));
    sub.append(p);
    sub.append("\x15\0\0\0\0", 5);  // field 2 (score), 0.0f
    sub.append("\x18\x01");         // field 3 (type), NORMAL
    bytes.push_back('\x0a');        // ModelProto field 1 (pieces)
    bytes.push_back(static_cast<char>(sub.size()));
    bytes.append(sub);
  }
  const std::string out = (tmp().path / (name + ".model")).string();
  std::ofstream(out, std::ios::binary) << bytes;
  return out;
}

// Llama-2's trainer options.
std::string llama_model() {
  return train("llama", "--remove_extra_whitespaces=false --allow_whitespace_only_pieces=true --split_digits=true");
}

// The tokenizer over model with GPTRAIN_SPM_ENCODER set to mode for its construction.
SentencePieceTokenizer make(const std::string& model, const char* mode) {
  ::setenv("GPTRAIN_SPM_ENCODER", mode, 1);
  SentencePieceTokenizer t("GPTSentencePieceTokenizer", model);
  ::unsetenv("GPTRAIN_SPM_ENCODER");
  return t;
}

std::vector<std::string> hard_texts() {
  return {"",
          " ",
          "  ",
          "a",
          " a",
          "a ",
          "  leading and trailing  ",
          "hello world",
          "hello  world",
          "hello\u2581world \u2581\u2581x\u2581",
          "\u2581",
          "    def encode(self, text):",
          "\t\ttab\n\nnl",
          "1234567890 0000000000000",
          "Grüße café naïve",
          "中文文本没有空格分词。",
          "한국어 텍스트 (unseen script)",
          "😀😀 👨‍👩‍👧‍👦 🏳️‍🌈",
          std::string("nul\0byte", 8),
          "\xff\xfe invalid \xc3 lone lead \xe2\x96 cut \xed\xa0\x80 surrogate \xe0\x80\x80 overlong",
          "\xf4\x90\x80\x80 past U+10FFFF \xf0\x8f\xbf\xbf overlong4 \xef\xbf\xbd real U+FFFD",
          "\x80\x80\x80",
          std::string(300, ' '),
          std::string(200, 'a'),
          "the the the the the the the the the the the the the the the the the the the the the the the"};
}

// Random text from fragments that stress white space, "▁", scripts and invalid bytes.
std::vector<std::string> random_texts(size_t count, uint32_t seed) {
  const std::vector<std::string> parts = {" ",        "  ",
                                          "    ",     "\t",
                                          "\n",       "\u2581",
                                          "the",      "quick",
                                          "hello",    "world",
                                          "encode",   "self",
                                          "1",        "23",
                                          "456",      ".",
                                          ",",        "(",
                                          ")",        "é",
                                          "ü",        "中",
                                          "文",       "日本",
                                          "😀",        "ß",
                                          "\xff",     "\xc3",
                                          "\x80",     "\xed\xa0\x80",
                                          "\xe2\x96", std::string(1, '\0'),
                                          "Ω",        "κείμενο",
                                          "def",      "ing",
                                          "ion",      "\u00a0",
                                          "\u3000",   "\xef\xbf\xbd",
                                          "x",        "A",
                                          "Z",        "   x",
                                          "a  ",      "!"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string t;
    const size_t n = rng() % 40;
    for (size_t k = 0; k < n; ++k) t += parts[rng() % parts.size()];
    if (i % 10 == 0) {  // raw random bytes too
      t.clear();
      for (size_t k = rng() % 30; k > 0; --k) t += static_cast<char>(rng() & 0xff);
    }
    out.push_back(std::move(t));
  }
  return out;
}

void check_same_ids(const std::string& model) {
  SentencePieceTokenizer native = make(model, "native");
  SentencePieceTokenizer library = make(model, "library");
  REQUIRE(native.native_encoder());
  REQUIRE_FALSE(library.native_encoder());
  std::vector<std::string> texts = hard_texts();
  for (std::string& t : random_texts(3000, 1234)) texts.push_back(std::move(t));
  size_t pieces = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads the chunk cache
    for (const std::string& t : texts) {
      INFO("model " << model << ", text (" << t.size() << " bytes): " << t);
      const auto want = library.encode(t);
      REQUIRE(native.encode(t) == want);
      pieces += want.size();
    }
  }
  CHECK(pieces > texts.size());  // not all empty
}

}  // namespace

TEST_CASE("spm native BPE: ids equal the library's on a Llama-2-style model") { check_same_ids(llama_model()); }

TEST_CASE("spm native BPE: ids equal the library's with extra white space removed, without a dummy prefix") {
  check_same_ids(train("collapse", ""));
  check_same_ids(train("noprefix", "--add_dummy_prefix=false --remove_extra_whitespaces=false"));
}

TEST_CASE("spm native BPE: ids equal the library's with user-defined pieces") {
  // "hello" and "ing" sit inside words the trainer would merge otherwise; "\u2581\u2581" matches spaces.
  check_same_ids(train("userdef",
                       "--remove_extra_whitespaces=false --user_defined_symbols=<CLS>,hello,ing,"
                       "\u2581\u2581,\u00e9,hello<CLS>"));
  check_same_ids(train("userdef_collapse", "--user_defined_symbols=<CLS>,hello,ing,\u2581\u2581"));
  // The trainer never makes a NORMAL piece holding a user-defined one; a model edited to hold "▁hello" and
  // "hello," (scored above every other piece) shows that user-defined symbols do not merge.
  const std::string edited =
      with_pieces(train("userdef_edit", "--user_defined_symbols=hello"), {"\u2581hello", "hello,"}, "userdef_edit2");
  check_same_ids(edited);
  SentencePieceTokenizer t = make(edited, "native");
  const auto ids = t.encode(" hello, hello");
  CHECK(std::find(ids.begin(), ids.end(), t.processor().PieceToId("\u2581hello")) == ids.end());
}

TEST_CASE("spm native BPE: ids equal the library's when pieces cross spaces") {
  const std::string model = train("across", "--split_by_whitespace=false --remove_extra_whitespaces=false");
  SentencePieceModelSpec spec;
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.Load(model).ok());
  REQUIRE(parse_sentencepiece_model(sp.serialized_model_proto(), spec));
  bool inner_space = false;
  for (const auto& p : spec.pieces)
    inner_space |= p.text.find("\u2581", 1) != std::string::npos && p.text.rfind("\u2581\u2581", 0) != 0;
  REQUIRE(inner_space);  // the case this test is for: pieces like "o▁w"
  check_same_ids(model);
}

TEST_CASE("spm native BPE: the model reader agrees with the library") {
  const std::string model = llama_model();
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.Load(model).ok());
  SentencePieceModelSpec spec;
  REQUIRE(parse_sentencepiece_model(sp.serialized_model_proto(), spec));
  REQUIRE(static_cast<int>(spec.pieces.size()) == sp.GetPieceSize());
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    const auto& p = spec.pieces[static_cast<size_t>(id)];
    CHECK(p.text == sp.IdToPiece(id));
    CHECK(p.score == sp.GetScore(id));
    CHECK((p.type == SentencePieceModelSpec::kByte) == sp.IsByte(id));
    CHECK((p.type == SentencePieceModelSpec::kControl) == sp.IsControl(id));
    CHECK((p.type == SentencePieceModelSpec::kUnknown) == sp.IsUnknown(id));
  }
  CHECK(spec.model_type == SentencePieceModelSpec::kBpe);
  CHECK(spec.byte_fallback);
  CHECK(spec.normalizer_name == "identity");
  CHECK_FALSE(spec.has_charsmap);
  CHECK(spec.add_dummy_prefix);
  CHECK_FALSE(spec.remove_extra_whitespaces);
  CHECK_FALSE(parse_sentencepiece_model("\x0a\xff", spec));  // a length past the end
}

TEST_CASE("spm native BPE: models it cannot reproduce stay with the library") {
  const auto refusal = [](const std::string& model) {
    SentencePieceTokenizer t = make(model, "auto");
    CHECK_FALSE(t.native_encoder());
    CHECK_THROWS_WITH(make(model, "native"), Catch::Contains("native encoder does not take this model"));
    return t.native_encoder_refusal();
  };
  CHECK(refusal(train("nfkc", "", "--model_type=bpe --byte_fallback=true")).find("normalization rules (nmt_nfkc)") !=
        std::string::npos);
  CHECK(refusal(train("nobytes", "", "--model_type=bpe --normalization_rule_name=identity")) == "no byte fallback");
  const std::string unigram = train("unigram", "", "--model_type=unigram --byte_fallback=true");
  CHECK(refusal(unigram) == "not a BPE model");
  CHECK(make(llama_model(), "auto").native_encoder());
  ::setenv("GPTRAIN_SPM_ENCODER", "fast", 1);
  CHECK_THROWS_WITH(SentencePieceTokenizer("Llama2Tokenizer", unigram),
                    Catch::Contains("GPTRAIN_SPM_ENCODER=fast: expected auto, native or library"));
  ::unsetenv("GPTRAIN_SPM_ENCODER");
}
