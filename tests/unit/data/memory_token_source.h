// Test helper: a TokenSource over in-memory sequences, token value = 1000 * sequence + position so a
// window's content says exactly where it came from.
#pragma once

#include <string>
#include <vector>

#include "data/gpt_dataset/sample_dataset.h"

namespace gptrain::test {

class MemoryTokenSource : public TokenSource {
 public:
  explicit MemoryTokenSource(std::vector<int32_t> lengths) : lengths_(std::move(lengths)) {}
  std::string path() const override { return "memory"; }
  int64_t num_sequences() const override { return static_cast<int64_t>(lengths_.size()); }
  std::span<const int32_t> sequence_lengths() const override { return lengths_; }
  void read(int64_t seq, int64_t offset, int64_t count, int32_t* out) const override {
    for (int64_t t = 0; t < count; ++t) out[t] = static_cast<int32_t>(1000 * seq + offset + t);
  }

 private:
  std::vector<int32_t> lengths_;
};

}  // namespace gptrain::test
