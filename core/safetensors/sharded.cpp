#include "core/safetensors/sharded.h"

#include "core/common/error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace gptrain::safetensors {

namespace fs = std::filesystem;
using nlohmann::json;

uint64_t parse_size(const std::string& text, const std::string& what) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) fail("{}: expected a size such as 5GB, 500MB, 2GiB or a byte count, got \"{}\"", what, text);
  std::string unit;
  for (std::size_t j = i; j < text.size(); ++j)
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[j])));
  uint64_t mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KB")
    mult = 1000ULL;
  else if (unit == "MB")
    mult = 1000ULL * 1000;
  else if (unit == "GB")
    mult = 1000ULL * 1000 * 1000;
  else if (unit == "TB")
    mult = 1000ULL * 1000 * 1000 * 1000;
  else if (unit == "KIB")
    mult = 1ULL << 10;
  else if (unit == "MIB")
    mult = 1ULL << 20;
  else if (unit == "GIB")
    mult = 1ULL << 30;
  else if (unit == "TIB")
    mult = 1ULL << 40;
  else
    fail("{}: unknown size unit \"{}\" in \"{}\" (expected B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", what,
         text.substr(i), text);
  const uint64_t n = std::stoull(text.substr(0, i));
  if (n == 0) fail("{}: size must be positive, got \"{}\"", what, text);
  if (n > UINT64_MAX / mult) fail("{}: size \"{}\" is too large", what, text);
  return n * mult;
}

ShardedWriter::ShardedWriter(std::string dir, std::vector<TensorSpec> specs, uint64_t max_shard_bytes,
                             std::map<std::string, std::string> metadata)
    : dir_(std::move(dir)) {
  if (max_shard_bytes == 0) fail("{}: max shard size must be positive", dir_);
  std::vector<std::vector<TensorSpec>> shards;
  uint64_t cur = 0;
  for (auto& s : specs) {
    const uint64_t n = s.nbytes();
    total_tensor_bytes_ += n;
    if (shards.empty() || (cur > 0 && cur + n > max_shard_bytes)) {
      shards.emplace_back();
      cur = 0;
    }
    cur += n;
    shards.back().push_back(std::move(s));
  }
  if (shards.empty()) shards.emplace_back();
  const std::size_t k = shards.size();
  for (std::size_t i = 0; i < k; ++i) {
    const std::string name = k == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, k);
    for (const auto& s : shards[i])
      if (!shard_of_.emplace(s.name, i).second) fail("{}: tensor \"{}\" declared twice", dir_, s.name);
    shard_names_.push_back(name);
    writers_.push_back(std::make_unique<Writer>((fs::path(dir_) / name).string(), std::move(shards[i]), metadata));
  }
}

Writer& ShardedWriter::writer_for(const std::string& name) {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) fail("{}: tensor \"{}\" was not declared", dir_, name);
  return *writers_[it->second];
}

void ShardedWriter::write_f32(const std::string& name, const float* src, std::size_t n) {
  writer_for(name).write_f32(name, src, n);
}
void ShardedWriter::write(const std::string& name, std::span<const std::byte> bytes) {
  writer_for(name).write(name, bytes);
}

uint64_t ShardedWriter::finish() {
  uint64_t total = 0;
  for (auto& w : writers_) total += w->finish();
  if (writers_.size() > 1) {
    json index;
    index["metadata"] = {{"total_size", total_tensor_bytes_}};
    json map = json::object();
    for (const auto& [tensor, shard] : shard_of_) map[tensor] = shard_names_[shard];
    index["weight_map"] = map;
    const std::string path = (fs::path(dir_) / "model.safetensors.index.json").string();
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream f(tmp);
      f << index.dump(2) << "\n";
      if (!f) fail("{}: cannot write", tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("{}: cannot rename into place", path);
    total += fs::file_size(path);
  }
  return total;
}

std::vector<std::string> ShardedWriter::file_names() const {
  auto names = shard_names_;
  if (writers_.size() > 1) names.push_back("model.safetensors.index.json");
  return names;
}

WeightSet::WeightSet(const std::string& dir) : dir_(dir) {
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::exists(index_path)) {
    json index;
    try {
      std::ifstream f(index_path);
      index = json::parse(f);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON: {}", index_path.string(), e.what());
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail("{}: expected an object with a \"weight_map\" object", index_path.string());
    std::map<std::string, std::size_t> file_idx;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail("{}: weight_map[\"{}\"] must be a file name", index_path.string(), it.key());
      const std::string file = it.value().get<std::string>();
      if (file.find('/') != std::string::npos || file == "..")
        fail("{}: weight_map[\"{}\"] = \"{}\" must be a file in the same directory", index_path.string(), it.key(),
             file);
      auto [fit, added] = file_idx.emplace(file, readers_.size());
      if (added) {
        const fs::path p = fs::path(dir) / file;
        // The error_code form: a name too long for the file system is a missing file, not an exception.
        std::error_code ec;
        if (!fs::is_regular_file(p, ec))
          fail("{}: lists \"{}\" which does not exist{}", index_path.string(), file,
               ec ? " (" + ec.message() + ")" : "");
        readers_.push_back(std::make_unique<Reader>(p.string()));
      }
      if (!readers_[fit->second]->has(it.key()))
        fail("{}: weight_map puts \"{}\" in {} but that file has no such tensor", index_path.string(), it.key(), file);
      where_[it.key()] = fit->second;
    }
    for (std::size_t i = 0; i < readers_.size(); ++i)
      for (const auto& t : readers_[i]->tensors())
        if (!where_.count(t.name))
          fail("{}: holds tensor \"{}\" which the index does not list", readers_[i]->path(), t.name);
  } else if (fs::exists(single)) {
    readers_.push_back(std::make_unique<Reader>(single.string()));
    for (const auto& t : readers_[0]->tensors()) where_[t.name] = 0;
  } else {
    fail(
        "{}: no model.safetensors or model.safetensors.index.json (only safetensors weights are supported; "
        "convert pytorch_model.bin with transformers' save_pretrained(safe_serialization=True) first)",
        dir);
  }
}

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> v;
  for (const auto& [n, i] : where_) v.push_back(n);
  return v;
}

const Reader& WeightSet::reader_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) fail("{}: the weights have no tensor \"{}\"", dir_, name);
  return *readers_[it->second];
}

const TensorInfo& WeightSet::info(const std::string& name) const { return reader_of(name).info(name); }
void WeightSet::read_f32(const std::string& name, float* dst, std::size_t n) const {
  reader_of(name).read_f32(name, dst, n);
}
std::vector<float> WeightSet::read_f32(const std::string& name) const { return reader_of(name).read_f32(name); }

uint64_t WeightSet::total_bytes() const {
  uint64_t t = 0;
  for (const auto& r : readers_)
    for (const auto& x : r->tensors()) t += x.nbytes();
  return t;
}

}  // namespace gptrain::safetensors
