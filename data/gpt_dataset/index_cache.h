// On-disk cache of index arrays, Megatron-style: in one directory, per entry
//   {hash}-{Class}-{split}-description.txt    the JSON text that determines the arrays
//   {hash}-{Class}-{split}-{array}.npy        plain .npy files (np.load-able), memory-mapped on load
//   {hash}-{Class}-{split}-checksums.json     written last: byte size and checksum of every .npy
// hash = FNV-1a-64 of the description, which includes a checksum of the sequence lengths, so a changed
// dataset gets a new entry. An entry whose checksums file is missing or disagrees is rebuilt.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/gpt_dataset/npy_file.h"

namespace gptrain {

struct CacheArray {
  std::string name;   // e.g. "document_index"
  std::string descr;  // numpy dtype, e.g. "<i4"
  std::vector<int64_t> shape;
  const void* data;
  size_t item_size;
};

class IndexCache {
 public:
  // stem_class e.g. "GPTDataset"; split e.g. "train".
  IndexCache(std::string dir, const std::string& description, const std::string& cls, const std::string& split);

  // The mapped arrays when a complete, uncorrupted entry exists; nullopt (with the reason logged) otherwise.
  std::optional<std::map<std::string, NpyArray>> load(const std::vector<std::string>& names) const;
  // Writes every array, the description, then the checksums file. Returns false (and warns) when the
  // directory is not writable, so callers can go on with the in-memory arrays.
  bool save(const std::vector<CacheArray>& arrays) const;

  std::string path(const std::string& suffix) const;

 private:
  std::string dir_;
  std::string description_;
  std::string stem_;
};

std::string fnv1a64_hex(const void* data, size_t bytes);

}  // namespace gptrain
