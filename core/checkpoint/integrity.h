// Checksums of a checkpoint's tensors (one CRC-32C per tensor, in its file's __metadata__) and of its
// metadata.json: what turns a flipped bit on disk into a load error naming the tensor instead of a run
// that resumes at loss 1e35.
#pragma once

#include "core/safetensors/reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace gptrain::checkpoint {

// The checksums a tensor file records (tensor name -> CRC-32C); nullopt for a file written before
// checksums existed. Malformed entries are an Error naming the file.
std::optional<std::map<std::string, uint32_t>> recorded_checksums(const safetensors::Reader& r);

// nullopt when tensor `name` of r has CRC-32C `expected`, else "<file>: tensor "<name>" is damaged: ...".
std::optional<std::string> check_tensor(const safetensors::Reader& r, const std::string& name, uint32_t expected);

// metadata.json's own checksum: CRC-32C of the compact dump of the object without its "crc32c" key (the
// dump of a parsed object is canonical: sorted keys, shortest round-trip numbers).
std::string metadata_checksum(const nlohmann::json& without_checksum);
// Throws an Error naming `path` when `j` holds a "crc32c" that its content does not match.
void verify_metadata_checksum(const nlohmann::json& j, const std::string& path);

}  // namespace gptrain::checkpoint
