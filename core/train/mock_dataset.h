// --mock-data: a synthetic SampleDataset (Megatron's MockGPTDataset plays the same role), so the loop,
// logging and checkpoints can be exercised without a corpus. Sample i is a deterministic function of
// (seed, i): a random-length run of an arithmetic token sequence followed by EOD and random tokens, so
// a model can learn something (the next token is predictable inside a run).
#pragma once

#include "data/gpt_dataset/sample_dataset.h"

#include <cstdint>

namespace gptrain {

class MockSampleDataset final : public SampleDataset {
 public:
  MockSampleDataset(int64_t num_samples, int64_t seq_length, int32_t vocab_size, int32_t eod_token, uint64_t seed);
  int64_t size() const override { return num_samples_; }
  int64_t seq_length() const override { return seq_length_; }
  void read_sample(int64_t i, std::span<int32_t> out) const override;
  std::string describe() const override;

 private:
  int64_t num_samples_, seq_length_;
  int32_t vocab_size_, eod_;
  uint64_t seed_;
};

}  // namespace gptrain
