// Megatron's BlendedDataset: sample i is sample dataset_sample_index[i] of dataset dataset_index[i].
#pragma once

#include <memory>
#include <vector>

#include "data/blend/blend.h"
#include "data/gpt_dataset/array_view.h"
#include "data/gpt_dataset/sample_dataset.h"

namespace gptrain {

class BlendedDataset : public SampleDataset {
 public:
  // Checks that no dataset is asked for more samples than it has (Megatron's IndexError).
  BlendedDataset(std::vector<std::shared_ptr<const SampleDataset>> datasets, ArrayView<int16_t> dataset_index,
                 ArrayView<int64_t> dataset_sample_index, std::string name);

  int64_t size() const override { return dataset_index_.size(); }
  int64_t seq_length() const override { return datasets_.front()->seq_length(); }
  void read_sample(int64_t i, std::span<int32_t> out) const override;
  std::string describe() const override;
  std::string describe_sample(int64_t i) const override;

  const std::vector<std::shared_ptr<const SampleDataset>>& datasets() const { return datasets_; }
  const ArrayView<int16_t>& dataset_index() const { return dataset_index_; }
  const ArrayView<int64_t>& dataset_sample_index() const { return dataset_sample_index_; }

 private:
  std::vector<std::shared_ptr<const SampleDataset>> datasets_;
  ArrayView<int16_t> dataset_index_;
  ArrayView<int64_t> dataset_sample_index_;
  std::string name_;
};

}  // namespace gptrain
