#include "core/hf/tokenizer_files.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace gptrain::hf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
void write_json(const fs::path& p, const json& j) {
  std::ofstream f(p);
  f << j.dump(2) << "\n";
  if (!f) fail("{}: cannot write", p.string());
}
void copy_file(const std::string& from, const fs::path& to, const char* flag) {
  if (!fs::is_regular_file(from)) fail("{} {}: no such file", flag, from);
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) fail("{}: cannot copy to {}: {}", from, to.string(), ec.message());
}
}  // namespace

void write_gpt2_tokenizer(const std::string& out_dir, const std::string& vocab_file, const std::string& merge_file,
                          int model_max_length) {
  // Validate the vocabulary is a JSON object before shipping it.
  {
    std::ifstream f(vocab_file);
    if (!f) fail("--vocab-file {}: cannot open", vocab_file);
    try {
      if (!json::parse(f).is_object()) fail("--vocab-file {}: expected a JSON object token -> id", vocab_file);
    } catch (const json::exception& e) {
      fail("--vocab-file {}: not valid JSON: {}", vocab_file, e.what());
    }
  }
  copy_file(vocab_file, fs::path(out_dir) / "vocab.json", "--vocab-file");
  copy_file(merge_file, fs::path(out_dir) / "merges.txt", "--merge-file");
  const std::string eot = "<|endoftext|>";
  write_json(fs::path(out_dir) / "tokenizer_config.json", json{{"tokenizer_class", "GPT2Tokenizer"},
                                                               {"model_max_length", model_max_length},
                                                               {"add_prefix_space", false},
                                                               {"errors", "replace"},
                                                               {"bos_token", eot},
                                                               {"eos_token", eot},
                                                               {"unk_token", eot},
                                                               {"clean_up_tokenization_spaces", false}});
  write_json(fs::path(out_dir) / "special_tokens_map.json",
             json{{"bos_token", eot}, {"eos_token", eot}, {"unk_token", eot}});
}

int copy_hf_tokenizer(const std::string& from_dir, const std::string& out_dir) {
  int n = 0;
  for (const char* name : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
                           "vocab.json", "merges.txt", "added_tokens.json"}) {
    const fs::path p = fs::path(from_dir) / name;
    if (fs::is_regular_file(p)) {
      copy_file(p.string(), fs::path(out_dir) / name, "--tokenizer-dir");
      ++n;
    }
  }
  if (n == 0)
    fail("--tokenizer-dir {}: no tokenizer files (tokenizer.json, tokenizer.model, vocab.json, ...)", from_dir);
  return n;
}

void write_hf_tokenizer(const std::string& tokenizer_model, const std::string& out_dir, int model_max_length) {
  const fs::path out(out_dir);
  if (fs::is_directory(tokenizer_model)) {
    copy_hf_tokenizer(tokenizer_model, out_dir);
  } else {
    copy_file(tokenizer_model, out / "tokenizer.json", "--tokenizer-model");
    const fs::path dir = fs::path(tokenizer_model).parent_path();
    for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"})
      if (fs::is_regular_file(dir / name)) copy_file((dir / name).string(), out / name, "--tokenizer-model");
  }
  if (fs::is_regular_file(out / "tokenizer_config.json")) return;
  const HuggingFaceTokenizer tok(tokenizer_model);
  const std::string eos = tok.decode(std::vector<int32_t>{tok.eod_id()});
  json cfg{{"tokenizer_class", "PreTrainedTokenizerFast"},
           {"model_max_length", model_max_length},
           {"eos_token", eos},
           {"clean_up_tokenization_spaces", false}};
  if (const auto bos = tok.bos_id()) cfg["bos_token"] = tok.decode(std::vector<int32_t>{*bos});
  write_json(out / "tokenizer_config.json", cfg);
}

namespace {
// Why transformers' LlamaTokenizerFast, converted from tokenizer.model, would give other ids than SentencePiece
// (it hard-codes <unk> <s> </s> as ids 0 1 2 and replaces SentencePiece's normalizer by "prepend ▁, spaces to
// ▁"); empty when it would not. The normalizer is probed by its effect: the library has no accessor for it.
std::string fast_tokenizer_caveat(const SentencePieceTokenizer& tok) {
  const auto& sp = tok.processor();
  std::vector<std::string> why;
  if (sp.GetPieceSize() < 3 || sp.unk_id() != 0 || sp.bos_id() != 1 || sp.eos_id() != 2 || sp.IdToPiece(1) != "<s>" ||
      sp.IdToPiece(2) != "</s>")
    why.push_back("its <unk>, <s>, </s> are not ids 0, 1, 2");
  if (sp.EncodeAsPieces("x  y") == sp.EncodeAsPieces("x y")) why.push_back("it removes extra white space");
  if (sp.EncodeAsIds("\xef\xbd\x88\xef\xbd\x89") == sp.EncodeAsIds("hi")) why.push_back("it normalizes (NFKC)");
  const auto pieces = sp.EncodeAsPieces("hi");
  if (pieces.empty() || pieces[0].rfind("\xe2\x96\x81", 0) != 0) why.push_back("it adds no dummy prefix");
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}
}  // namespace

void write_sentencepiece_tokenizer(const SentencePieceTokenizer& tok, const std::string& out_dir,
                                   int model_max_length) {
  const fs::path out(out_dir);
  copy_file(tok.path(), out / "tokenizer.model", "--tokenizer-model");
  const auto& sp = tok.processor();
  // A token's text: the model's piece, or one of SentencePieceTokenizer's added tokens (its <EOD>).
  const auto piece = [&](int id) {
    if (id < 0) return json(nullptr);
    if (id < tok.piece_count()) return json(sp.IdToPiece(id));
    return json(tok.decode_continuation(std::vector<int32_t>{id}));
  };
  json special{
      {"bos_token", piece(sp.bos_id())}, {"eos_token", piece(tok.eod_id())}, {"unk_token", piece(sp.unk_id())}};
  if (sp.pad_id() >= 0) special["pad_token"] = piece(sp.pad_id());
  json cfg{{"tokenizer_class", "LlamaTokenizer"},
           {"add_bos_token", tok.flavor() == SentencePieceTokenizer::Flavor::kLlama2},
           {"add_eos_token", false},
           {"legacy", true},
           {"sp_model_kwargs", json::object()},
           {"model_max_length", model_max_length},
           {"clean_up_tokenization_spaces", false}};
  cfg.update(special);
  json added = json::object();
  for (const SpecialToken& t : tok.special_tokens())
    added[std::to_string(t.id)] = {{"content", t.content}, {"special", true}, {"normalized", false},
                                   {"lstrip", false},      {"rstrip", false}, {"single_word", false}};
  cfg["added_tokens_decoder"] = added;
  write_json(out / "tokenizer_config.json", cfg);
  write_json(out / "special_tokens_map.json", special);
  if (const std::string why = fast_tokenizer_caveat(tok); !why.empty())
    log::warn(
        "convert_to_hf: {} would give other ids with transformers' LlamaTokenizerFast, which AutoTokenizer builds from "
        "tokenizer.model ({}): load it with use_fast=False (LlamaTokenizer) for SentencePiece's ids",
        tok.path(), why);
}

}  // namespace gptrain::hf
