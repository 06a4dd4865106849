// What the loader and inspect_data read from: a dataset of fixed-length token windows, whether one
// split of one file (GPTDataset) or a blend of several (BlendedDataset).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gptrain {

class SampleDataset {
 public:
  virtual ~SampleDataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t seq_length() const = 0;
  // Sample i (Megatron's dataset[i], after its shuffle): seq_length + 1 tokens into out.
  virtual void read_sample(int64_t i, std::span<int32_t> out) const = 0;
  virtual std::string describe() const = 0;
  // Where sample i comes from (file, split, sequences), for errors about its tokens.
  virtual std::string describe_sample(int64_t i) const;
};

// Where GPTDataset gets tokens: one .bin/.idx pair (IndexedDataset) or, in tests, memory.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual std::string path() const = 0;
  virtual int64_t num_sequences() const = 0;
  // Token count of every sequence, in file order.
  virtual std::span<const int32_t> sequence_lengths() const = 0;
  // Tokens [offset, offset + count) of sequence seq, widened to int32.
  virtual void read(int64_t seq, int64_t offset, int64_t count, int32_t* out) const = 0;
};

}  // namespace gptrain
