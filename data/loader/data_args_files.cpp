#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.h"
#include "data/loader/gpt_data.h"

namespace gptrain {

static std::vector<std::string> split_ws(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> read_data_args_file(const std::string& path) {
  std::ifstream f(path);
  check(f.good(), "--data-args-path {}: cannot open", path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto items = split_ws(ss.str());
  check(!items.empty(), "--data-args-path {}: the file lists no datasets", path);
  return items;
}

void read_per_split_data_args(const std::string& path, DataArgs& args) {
  std::ifstream f(path);
  check(f.good(), "--per-split-data-args-path {}: cannot open", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    fail("--per-split-data-args-path {}: not valid JSON: {}", path, e.what());
  }
  check(j.is_object(), "--per-split-data-args-path {}: expected an object with keys train/valid/test", path);
  for (const auto& [key, value] : j.items()) {
    std::vector<std::string>* dst = key == "train"   ? &args.train_data_path
                                    : key == "valid" ? &args.valid_data_path
                                    : key == "test"  ? &args.test_data_path
                                                     : nullptr;
    check(dst != nullptr, "--per-split-data-args-path {}: unknown key '{}' (expected train, valid, test)", path, key);
    dst->clear();
    if (value.is_null()) continue;
    if (value.is_string()) {
      *dst = split_ws(value.get<std::string>());
    } else {
      check(value.is_array(), "--per-split-data-args-path {}: '{}' must be a list or a string", path, key);
      for (const auto& v : value) {
        if (v.is_string())
          dst->push_back(v.get<std::string>());
        else if (v.is_number())
          dst->push_back(v.dump());
        else
          fail("--per-split-data-args-path {}: '{}' holds {}, expected strings or numbers", path, key, v.dump());
      }
    }
  }
}

}  // namespace gptrain
