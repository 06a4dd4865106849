#include "data/loader/data_args_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.h"
#include "data/blend/blend.h"

namespace gptrain {

namespace {

std::vector<std::string> split_ws(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string read_text(const std::string& flag, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  check(f.good(), "{} {}: cannot open the file", flag, path);
  std::stringstream ss;
  ss << f.rdbuf();
  check(!f.bad(), "{} {}: read error", flag, path);
  return ss.str();
}

// "line L, column C" of a byte offset (nlohmann counts bytes read, so the offset is one past the fault).
std::string position_of(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// The line of the first occurrence of "key": JSON values carry no positions, so a wrong value is placed
// by its key's text.
std::string key_line(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  return fmt::format(" (line {})", 1 + std::count(text.begin(), text.begin() + long(at), '\n'));
}

}  // namespace

std::vector<std::string> read_data_args_file(const std::string& path) {
  const std::string flag = "--data-args-path";
  std::istringstream in(read_text(flag, path));
  std::vector<std::string> items;
  std::vector<int> lines;
  int line = 0;
  for (std::string text; std::getline(in, text);) {
    ++line;
    for (const std::string& w : split_ws(text)) {
      items.push_back(w);
      lines.push_back(line);
    }
  }
  check(!items.empty(),
        "{} {}: the file lists no datasets (expected prefixes, or weight prefix pairs, separated by white space)", flag,
        path);
  // The weights' checks of --data-path (data/blend/blend.h), here with the line of the faulty weight.
  if (items.size() % 2 == 0) {
    size_t numbers = 0;
    for (size_t i = 0; i < items.size(); i += 2) numbers += parse_python_float(items[i]).has_value();
    for (size_t i = 0; i < items.size() && numbers > 0; i += 2) {
      const std::optional<double> w = parse_python_float(items[i]);
      check(w.has_value(),
            "{} {} line {}: '{}' (before {}) is not a number, but other weights are: expected weight prefix pairs "
            "with decimal weights or prefixes only",
            flag, path, lines[i], items[i], items[i + 1]);
      check(*w > 0 && std::isfinite(*w), "{} {} line {}: weight '{}' of {} must be a positive number", flag, path,
            lines[i], items[i], items[i + 1]);
    }
  }
  return items;
}

void read_per_split_data_args(const std::string& path, DataArgs& args) {
  const std::string flag = "--per-split-data-args-path";
  const std::string text = read_text(flag, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{} {}: not valid JSON at {}: {}", flag, path, position_of(text, e.byte), e.what());
  } catch (const nlohmann::json::exception& e) {  // e.g. a number out of double's range
    fail("{} {}: not valid JSON: {}", flag, path, e.what());
  }
  check(j.is_object(), "{} {}: expected a JSON object with the keys \"train\", \"valid\" and \"test\"", flag, path);
  for (const auto& [key, value] : j.items())
    check(key == "train" || key == "valid" || key == "test",
          "{} {}{}: unknown key \"{}\" (expected \"train\", \"valid\" and \"test\")", flag, path, key_line(text, key),
          key);
  // As Megatron: each split's key must be there; null leaves that split without data.
  for (const char* key : {"train", "valid", "test"})
    check(j.contains(key), "{} {}: no \"{}\" key (give all of \"train\", \"valid\" and \"test\"; null for none)", flag,
          path, key);
  auto read_split = [&](const char* key, std::vector<std::string>& dst) {
    const nlohmann::json& value = j.at(key);
    dst.clear();
    if (value.is_null()) return;
    if (value.is_string()) {
      dst = split_ws(value.get<std::string>());
    } else {
      check(value.is_array(), "{} {}{}: \"{}\" must be a list of weights and prefixes, or one string of them", flag,
            path, key_line(text, key), key);
      for (const auto& v : value) {
        if (v.is_string())
          dst.push_back(v.get<std::string>());
        else if (v.is_number())
          dst.push_back(v.dump());
        else
          fail("{} {}{}: \"{}\" holds {}, expected strings (prefixes) or numbers (weights)", flag, path,
               key_line(text, key), key, v.dump());
      }
    }
    check(!dst.empty(), "{} {}{}: \"{}\" lists no datasets (use null for a split without data)", flag, path,
          key_line(text, key), key);
  };
  read_split("train", args.train_data_path);
  read_split("valid", args.valid_data_path);
  read_split("test", args.test_data_path);
}

}  // namespace gptrain
