// Hugging Face weight sets: one "model.safetensors", or shards "model-0000k-of-0000K.safetensors"
// plus "model.safetensors.index.json" ({"metadata": {"total_size": N}, "weight_map": {name: file}})
// when the weights exceed the maximum shard size (transformers' default "5GB").
#pragma once

#include "core/safetensors/reader.h"
#include "core/safetensors/writer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gptrain::safetensors {

// "5GB" -> 5'000'000'000; accepts B, KB, MB, GB, TB (powers of 1000, as transformers) and KiB, MiB,
// GiB, TiB (powers of 1024), case-insensitive, or a bare byte count. `what` names the flag in errors.
uint64_t parse_size(const std::string& text, const std::string& what);

// Writes a weight set into `dir` (which must exist). Tensors go to shards in declaration order; a
// new shard starts when adding a tensor would exceed max_shard_bytes (a single larger tensor gets
// a shard of its own, as transformers does). With one shard the file is "model.safetensors" and no
// index is written. Each shard is a streaming Writer; tensors may be written in any order.
class ShardedWriter {
 public:
  ShardedWriter(std::string dir, std::vector<TensorSpec> specs, uint64_t max_shard_bytes,
                std::map<std::string, std::string> metadata = {});
  void write_f32(const std::string& name, const float* src, std::size_t n);
  void write(const std::string& name, std::span<const std::byte> bytes);
  // Finishes every shard, then writes the index (temp + rename). Returns total bytes of the files.
  uint64_t finish();
  std::size_t num_shards() const { return writers_.size(); }
  // Names of the files written (shards, then the index when there is one).
  std::vector<std::string> file_names() const;

 private:
  Writer& writer_for(const std::string& name);
  std::string dir_;
  std::vector<std::unique_ptr<Writer>> writers_;
  std::vector<std::string> shard_names_;
  std::map<std::string, std::size_t> shard_of_;  // tensor -> shard index
  uint64_t total_tensor_bytes_ = 0;
};

// Reads a weight set from a directory: model.safetensors.index.json when present (every listed
// file must exist and hold the tensors the map assigns to it), else model.safetensors.
class WeightSet {
 public:
  explicit WeightSet(const std::string& dir);
  const std::string& dir() const { return dir_; }
  std::vector<std::string> names() const;  // sorted
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  const Reader& reader_of(const std::string& name) const;
  void read_f32(const std::string& name, float* dst, std::size_t n) const;
  std::vector<float> read_f32(const std::string& name) const;
  // Sum of the data sizes of every tensor (for throughput reports).
  uint64_t total_bytes() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<Reader>> readers_;
  std::map<std::string, std::size_t> where_;
};

}  // namespace gptrain::safetensors
