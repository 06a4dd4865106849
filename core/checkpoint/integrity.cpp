#include "core/checkpoint/integrity.h"

#include "core/checkpoint/checkpoint.h"
#include "core/common/crc32c.h"
#include "core/common/error.h"

#include <charconv>

namespace gptrain::checkpoint {

using nlohmann::json;

std::string crc32c_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

namespace {
std::optional<uint32_t> parse_hex8(const std::string& s) {
  if (s.size() != 8) return std::nullopt;
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

std::optional<std::map<std::string, uint32_t>> recorded_checksums(const safetensors::Reader& r) {
  const auto it = r.metadata().find(kChecksumKey);
  if (it == r.metadata().end()) return std::nullopt;
  json j;
  try {
    j = json::parse(it->second);
  } catch (const json::exception& e) {
    fail("{}: the checksum table (\"{}\" in the header) is not valid JSON: {}", r.path(), kChecksumKey, e.what());
  }
  if (!j.is_object()) fail("{}: the checksum table (\"{}\") must be a JSON object", r.path(), kChecksumKey);
  std::map<std::string, uint32_t> crcs;
  for (const auto& [name, v] : j.items()) {
    const auto crc = v.is_string() ? parse_hex8(v.get<std::string>()) : std::nullopt;
    if (!crc) fail("{}: checksum of tensor \"{}\" must be 8 hex digits, got {}", r.path(), name, v.dump());
    crcs.emplace(name, *crc);
  }
  for (const auto& t : r.tensors())
    if (!crcs.count(t.name)) fail("{}: tensor \"{}\" has no checksum in the file's checksum table", r.path(), t.name);
  return crcs;
}

std::optional<std::string> check_tensor(const safetensors::Reader& r, const std::string& name, uint32_t expected) {
  const auto bytes = r.bytes(name);
  const uint32_t got = crc32c_extend(0, bytes.data(), bytes.size());
  if (got == expected) return std::nullopt;
  return fmt::format("{}: tensor \"{}\" is damaged: its bytes have CRC-32C {}, the save recorded {}", r.path(), name,
                     crc32c_hex(got), crc32c_hex(expected));
}

std::string metadata_checksum(const json& without_checksum) { return crc32c_hex(crc32c(without_checksum.dump())); }

void verify_metadata_checksum(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("crc32c")) return;
  json rest = j;
  rest.erase("crc32c");
  const std::string want = j["crc32c"].is_string() ? j["crc32c"].get<std::string>() : j["crc32c"].dump();
  const std::string got = metadata_checksum(rest);
  if (got != want)
    fail("{}: damaged: its content has CRC-32C {}, the save recorded {} (a changed value, not only white space)", path,
         got, want);
}

}  // namespace gptrain::checkpoint
