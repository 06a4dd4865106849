// Small helpers the family adapters share: reading config.json fields with messages that name the
// file and key, and building OutTensor lists.
#pragma once

#include "core/common/error.h"
#include "core/hf/adapter.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace gptrain::hf {

// "decoder.layers.i.": gptrain's checkpoint name prefix of layer i, in every family.
inline std::string gptrain_layer(int i) { return "decoder.layers." + std::to_string(i) + "."; }

// `j` as indented JSON into file `p` (an HF directory's config and tokenizer files).
inline void write_json(const std::filesystem::path& p, const nlohmann::json& j) {
  std::ofstream f(p);
  f << j.dump(2) << "\n";
  if (!f) fail("{}: cannot write", p.string());
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// config.json field: required (no fallback) or with a default; null counts as absent. The JSON type must
// be the field's own: json's get<int> would take 2.7 as 2 and true as 1.
template <typename T>
T cfg(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) fail("{}: \"{}\" is missing", where, key);
  const nlohmann::json& v = j[key];
  bool fits = false;
  const char* expected = "";
  if constexpr (std::is_same_v<T, bool>) {
    fits = v.is_boolean(), expected = "true or false";
  } else if constexpr (std::is_integral_v<T>) {
    fits = v.is_number_integer(), expected = "an integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    fits = v.is_number(), expected = "a number";
  } else {
    fits = v.is_string(), expected = "a string";
  }
  if (!fits) fail("{}: \"{}\" is {} ({}), expected {}", where, key, v.dump(), v.type_name(), expected);
  // json's get<int> of -2147483649 wraps around to 2147483647 instead of throwing.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const bool in_range =
        v.is_number_unsigned()
            ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
            : v.get<int64_t>() >= std::numeric_limits<T>::min() && v.get<int64_t>() <= std::numeric_limits<T>::max();
    if (!in_range) fail("{}: \"{}\" is {}, out of range", where, key, v.dump());
  }
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("{}: \"{}\" is {}, out of range", where, key, v.dump());
  }
}
template <typename T>
T cfg(const nlohmann::json& j, const char* key, const std::string& where, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return cfg<T>(j, key, where);
}

// rotary_percent such that int(head_dim * percent) == rotary_dim exactly (as ModelConfig computes it).
inline float rotary_percent_for(int rotary_dim, int head_dim) {
  float p = static_cast<float>(rotary_dim) / static_cast<float>(head_dim);
  while (static_cast<int>(static_cast<float>(head_dim) * p) < rotary_dim) p = std::nextafter(p, 2.0f);
  return p;
}

// Collects OutTensors whose producers read from one store.
struct OutList {
  const TensorStore& src;
  std::vector<OutTensor> out;
  void copy(std::string dst, std::string from, std::vector<int64_t> shape) {
    const TensorStore* s = &src;
    out.push_back({std::move(dst), shape, [s, from, shape] { return s->read_checked(from, shape); }});
  }
  void add(std::string dst, std::vector<int64_t> shape, std::function<std::vector<float>()> f) {
    out.push_back({std::move(dst), std::move(shape), std::move(f)});
  }
};

}  // namespace gptrain::hf
