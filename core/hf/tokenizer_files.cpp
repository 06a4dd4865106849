#include "core/hf/tokenizer_files.h"

#include "core/common/error.h"
#include "data/tokenizer/hf_tokenizer.h"

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

}  // namespace gptrain::hf
