// Writing one .safetensors file, streaming: the caller declares every tensor (name, dtype, shape)
// up front, so the header (with all offsets) is written first; tensor data is then written one
// tensor at a time, in any order, straight to its place in the file (pwrite), so no more than one
// tensor (or one conversion chunk) is ever held in memory. The file is written under
// "<path>.tmp.<pid>" and renamed on finish(); a Writer destroyed before finish() removes it.
//
// Layout follows the reference writer: tensors sorted by descending dtype alignment, then name,
// packed back to back; the header JSON is padded with spaces to a multiple of 8 bytes so the data
// section (and every tensor in it) is naturally aligned. "__metadata__" always holds
// {"format": "pt"} (transformers refuses files without it) plus the caller's entries.
#pragma once

#include "core/safetensors/dtype.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace gptrain::safetensors {

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t nbytes() const;
};

class Writer {
 public:
  Writer(std::string path, std::vector<TensorSpec> specs, std::map<std::string, std::string> metadata = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  const std::string& path() const { return path_; }
  // Raw bytes already in the declared dtype; size must equal the declared byte size.
  void write(const std::string& name, std::span<const std::byte> bytes);
  // fp32 values converted to the declared dtype (F32, BF16, F16 or F64); n must equal numel.
  void write_f32(const std::string& name, const float* src, std::size_t n);
  // Checks every tensor was written, flushes, renames the temp file to path(). Returns bytes written.
  uint64_t finish();

  // Total file size this writer produces (header + data), known before any data is written.
  uint64_t file_size() const { return data_start_ + data_len_; }

 private:
  struct Slot {
    TensorSpec spec;
    uint64_t begin = 0;
    bool written = false;
  };
  Slot& slot(const std::string& name);
  void pwrite_all(const void* p, std::size_t n, uint64_t offset);

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  std::map<std::string, Slot> slots_;
  uint64_t data_start_ = 0;
  uint64_t data_len_ = 0;
  bool finished_ = false;
};

// Convenience: write a whole file of fp32 tensors given as (spec, pointer) pairs.
struct HostTensorRef {
  TensorSpec spec;
  const float* data;  // numel fp32 values, converted to spec.dtype on write
};
void write_file(const std::string& path, std::span<const HostTensorRef> tensors,
                std::map<std::string, std::string> metadata = {});

}  // namespace gptrain::safetensors
