// Reading one .safetensors file (format: docs/hf-mapping.md §2.7).
// The file is memory-mapped, so opening a multi-GB shard costs nothing until tensors are read, and
// reading a tensor touches only its bytes. The header is validated strictly on open: a file this
// reader accepts is one the reference implementation accepts, and every rejection names the file.
#pragma once

#include "core/safetensors/dtype.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace gptrain::safetensors {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the data section
  uint64_t end = 0;
  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

// "(2, 3)" for messages.
std::string shape_string(std::span<const int64_t> shape);
int64_t shape_numel(std::span<const int64_t> shape);

class Reader {
 public:
  explicit Reader(std::string path);  // mmaps and validates; throws Error naming the file
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  Reader(Reader&& other) noexcept;
  Reader& operator=(Reader&& other) noexcept;

  const std::string& path() const { return path_; }
  // Tensors in file (offset) order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The "__metadata__" map (string -> string); empty when absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // Throws "<file>: no tensor named X" when missing.
  const TensorInfo& info(const std::string& name) const;
  // The tensor's raw little-endian bytes inside the mapping (valid while the Reader lives).
  std::span<const std::byte> bytes(const std::string& name) const;
  // Read a float tensor (F32, BF16, F16 or F64) converted to fp32. dst holds numel floats;
  // n must equal numel (a mismatch is an error naming the tensor and both sizes).
  void read_f32(const std::string& name, float* dst, std::size_t n) const;
  std::vector<float> read_f32(const std::string& name) const;
  // Read elements [first, first + n) of the flattened tensor as fp32 (for slicing large tensors).
  void read_f32_range(const std::string& name, std::size_t first, float* dst, std::size_t n) const;

 private:
  void validate_and_index(const char* header, std::size_t header_len, uint64_t data_len);
  void unmap();

  std::string path_;
  const std::byte* map_ = nullptr;
  std::size_t map_len_ = 0;
  std::size_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

}  // namespace gptrain::safetensors
