#include "core/hf/tokenizer_files.h"

#include "core/common/error.h"

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

}  // namespace gptrain::hf
