// One split of one tokenized file, served in Megatron's order: sample i is the seq_length + 1 token
// window shuffle_index[i] of the split's document/sample index (see gpt_index.h).
#pragma once

#include <memory>
#include <string>

#include "data/gpt_dataset/gpt_index.h"
#include "data/gpt_dataset/sample_dataset.h"

namespace gptrain {

class GPTDataset : public SampleDataset {
 public:
  GPTDataset(std::shared_ptr<const TokenSource> tokens, SplitKind split, SeqRange range, GPTIndexParams params,
             GPTIndex index);

  int64_t size() const override { return index_.shuffle_index.size(); }
  int64_t seq_length() const override { return params_.seq_length; }
  void read_sample(int64_t i, std::span<int32_t> out) const override;
  std::string describe() const override;
  std::string describe_sample(int64_t i) const override;

  const GPTIndex& index() const { return index_; }
  const GPTIndexParams& params() const { return params_; }
  SplitKind split() const { return split_; }
  SeqRange range() const { return range_; }
  const TokenSource& tokens() const { return *tokens_; }

 private:
  std::shared_ptr<const TokenSource> tokens_;
  SplitKind split_;
  SeqRange range_;
  GPTIndexParams params_;
  GPTIndex index_;
};

}  // namespace gptrain
