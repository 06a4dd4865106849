#include "core/train/mock_dataset.h"

#include "core/common/error.h"
#include "core/common/splitmix64.h"

#include <fmt/format.h>

namespace gptrain {

MockSampleDataset::MockSampleDataset(int64_t num_samples, int64_t seq_length, int32_t vocab_size, int32_t eod_token,
                                     uint64_t seed)
    : num_samples_(num_samples), seq_length_(seq_length), vocab_size_(vocab_size), eod_(eod_token), seed_(seed) {
  check(num_samples > 0 && seq_length > 0 && vocab_size > 1, "mock data needs samples, seq length and vocab > 0");
}

void MockSampleDataset::read_sample(int64_t i, std::span<int32_t> out) const {
  check(i >= 0 && i < num_samples_ && int64_t(out.size()) == seq_length_ + 1, "mock sample {} out of range", i);
  uint64_t state = splitmix64(seed_ ^ splitmix64(uint64_t(i)));
  auto next = [&] { return state = splitmix64(state); };
  const int64_t run = 1 + int64_t(next() % uint64_t(seq_length_));
  const int32_t start = int32_t(next() % uint64_t(vocab_size_)), stride = 1 + int32_t(next() % 7);
  for (int64_t t = 0; t <= seq_length_; ++t) {
    if (t < run)
      out[t] = int32_t((int64_t(start) + t * stride) % vocab_size_);
    else if (t == run)
      out[t] = eod_;
    else
      out[t] = int32_t(next() % uint64_t(vocab_size_));
  }
}

std::string MockSampleDataset::describe() const {
  return fmt::format("MockSampleDataset({} samples of {} tokens, vocab {})", num_samples_, seq_length_, vocab_size_);
}

}  // namespace gptrain
