// Minimal .npy (format 1.0) writer and memory-mapped reader for the index cache, so cached arrays are
// plain numpy files (np.load works on them) and every rank maps them instead of reading copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/indexed/indexed_dataset.h"  // MappedFile

namespace gptrain {

struct NpyArray {
  std::shared_ptr<const MappedFile> file;
  std::string descr;           // e.g. "<i8"
  std::vector<int64_t> shape;  // C order
  const void* data = nullptr;  // points into file
  int64_t num_elements() const;
};

// descr: "<i2", "<i4", "<i8", "<u4"; writes to path + ".tmp" and renames.
void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data,
               size_t item_size);

// Throws gptrain::Error on anything malformed (bad magic, header, truncated data).
NpyArray map_npy(const std::string& path);

// Fast 64-bit checksum of a byte range (word-wise multiply-xor), used to detect corrupt cache files.
uint64_t checksum64(const void* data, size_t bytes);

}  // namespace gptrain
