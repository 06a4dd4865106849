#include "core/hf/tokenizer_files.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/hf/adapter_util.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/rank_bpe.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/tiktoken_tokenizer.h"
#include "data/tokenizer/unicode_tables.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace gptrain::hf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
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

namespace {
// Bytes in GPT-2's byte alphabet, as a byte-level vocabulary spells them.
std::string byte_level(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) unicode::append_utf8(byte_to_unicode(static_cast<unsigned char>(c)), out);
  return out;
}
}  // namespace

void write_tiktoken_tokenizer(const TikTokenizer& tok, const std::string& out_dir, int model_max_length) {
  const RankBpe& ranks = tok.ranks();
  const std::vector<std::string>& specials = tok.all_special_tokens();
  const auto S = static_cast<int32_t>(specials.size());
  json vocab = json::object(), merges = json::array();
  int32_t unreachable = 0;
  for (int32_t r = 0; r < ranks.size(); ++r) {
    vocab[byte_level(ranks.rank_bytes(r))] = r + S;
    if (ranks.rank_bytes(r).size() < 2) continue;
    const auto parts = ranks.parts_below(r);
    if (parts.size() == 2)
      merges.push_back(byte_level(parts[0]) + " " + byte_level(parts[1]));
    else
      ++unreachable;
  }
  json added = json::array();
  for (int32_t id = 0; id < S; ++id) {
    // An added token whose text is also a vocabulary entry would take that entry's id in Hugging Face.
    if (vocab.contains(specials[id]))
      fail("TikTokenizer: special token {} is also a token of the vocabulary; a tokenizer.json cannot give it id {}",
           specials[id], id);
    // tokenizers numbers an added token absent from the model after the model's ids, so ids 0..S-1 are
    // model entries too (never produced by a merge: the text is matched as an added token first).
    vocab[specials[id]] = id;
    added.push_back({{"id", id},
                     {"content", specials[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const std::string_view regex = tok.pattern() == TiktokenPattern::kV1 ? kTiktokenV1Regex : kTiktokenV2Regex;
  const json byte_level_step = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  const json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
          byte_level_step}}}},
      {"post_processor", nullptr},
      {"decoder", byte_level_step},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", true},
        {"vocab", vocab},
        {"merges", merges}}}};
  const fs::path out(out_dir);
  write_json(out / "tokenizer.json", tokenizer);
  json special{{"bos_token", specials[*tok.bos_id()]}, {"eos_token", specials[tok.eod_id()]}};
  for (const char* name : {"unk", "pad", "mask", "cls", "sep"}) {
    const std::string text = std::string("<") + name + ">";
    if (std::find(specials.begin(), specials.end(), text) != specials.end())
      special[std::string(name) + "_token"] = text;
  }
  json cfg{{"tokenizer_class", "PreTrainedTokenizerFast"},
           {"model_max_length", model_max_length},
           {"clean_up_tokenization_spaces", false}};
  cfg.update(special);
  write_json(out / "tokenizer_config.json", cfg);
  write_json(out / "special_tokens_map.json", special);
  if (unreachable)
    log::warn(
        "convert_to_hf: {} of the {} tiktoken ranks are no merge of two lower ranks; tokenizer.json finds them only "
        "as a whole piece, so Hugging Face's ids can differ from tiktoken's where one forms inside a longer piece",
        unreachable, ranks.size());
}

}  // namespace gptrain::hf
