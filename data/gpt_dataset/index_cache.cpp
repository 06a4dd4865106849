#include "data/gpt_dataset/index_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/common/error.h"
#include "core/common/log.h"

namespace gptrain {

namespace fs = std::filesystem;

std::string fnv1a64_hex(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return fmt::format("{:016x}", h);
}

IndexCache::IndexCache(std::string dir, const std::string& description, const std::string& cls,
                       const std::string& split)
    : dir_(std::move(dir)), description_(description) {
  stem_ = fnv1a64_hex(description.data(), description.size()) + "-" + cls + "-" + split;
}

std::string IndexCache::path(const std::string& suffix) const {
  return (fs::path(dir_) / (stem_ + "-" + suffix)).string();
}

static std::optional<std::string> read_text(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<std::map<std::string, NpyArray>> IndexCache::load(const std::vector<std::string>& names) const {
  const auto sums_text = read_text(path("checksums.json"));
  if (!sums_text) return std::nullopt;  // never built, or a build was interrupted
  const auto desc = read_text(path("description.txt"));
  if (!desc || *desc != description_) {
    log::warn("index cache {}: description differs from the one expected; rebuilding", path("description.txt"));
    return std::nullopt;
  }
  try {
    const auto sums = nlohmann::json::parse(*sums_text);
    std::map<std::string, NpyArray> out;
    for (const auto& name : names) {
      const std::string p = path(name + ".npy");
      NpyArray a = map_npy(p);
      const auto& e = sums.at(name);
      const size_t bytes = a.file->size();
      check(e.at("bytes").get<uint64_t>() == bytes, "{}: {} bytes, the checksums file says {}", p, bytes,
            e.at("bytes").get<uint64_t>());
      const std::string sum = fmt::format("{:016x}", checksum64(a.file->data(), bytes));
      check(e.at("checksum").get<std::string>() == sum, "{}: checksum mismatch (file corrupt)", p);
      out.emplace(name, std::move(a));
    }
    return out;
  } catch (const std::exception& e) {
    log::warn("index cache in {} is corrupt ({}); rebuilding", dir_, e.what());
    return std::nullopt;
  }
}

bool IndexCache::save(const std::vector<CacheArray>& arrays) const {
  try {
    fs::create_directories(dir_);
    // Remove a stale checksums file first so a crash mid-write never leaves a "complete" entry.
    fs::remove(path("checksums.json"));
    nlohmann::ordered_json sums = nlohmann::ordered_json::object();
    for (const auto& a : arrays) {
      const std::string p = path(a.name + ".npy");
      write_npy(p, a.descr, a.shape, a.data, a.item_size);
      MappedFile f(p);
      sums[a.name] = {{"bytes", f.size()}, {"checksum", fmt::format("{:016x}", checksum64(f.data(), f.size()))}};
    }
    const auto write_atomic = [](const std::string& p, const std::string& text) {
      const std::string tmp = p + ".tmp." + std::to_string(::getpid());
      {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        check(f.good(), "{}: cannot create", tmp);
        f << text;
        f.flush();
        check(f.good(), "{}: write failed", tmp);
      }
      fs::rename(tmp, p);
    };
    write_atomic(path("description.txt"), description_);
    write_atomic(path("checksums.json"), sums.dump(2) + "\n");
    return true;
  } catch (const std::exception& e) {
    log::warn("cannot write the index cache in {} ({}); using the index in memory", dir_, e.what());
    return false;
  }
}

}  // namespace gptrain
