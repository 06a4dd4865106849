#include "data/blend/blended_dataset.h"

#include <fmt/format.h>

#include "core/common/error.h"

namespace gptrain {

BlendedDataset::BlendedDataset(std::vector<std::shared_ptr<const SampleDataset>> datasets,
                               ArrayView<int16_t> dataset_index, ArrayView<int64_t> dataset_sample_index,
                               std::string name)
    : datasets_(std::move(datasets)),
      dataset_index_(std::move(dataset_index)),
      dataset_sample_index_(std::move(dataset_sample_index)),
      name_(std::move(name)) {
  check(!datasets_.empty(), "{}: a blend needs at least one dataset", name_);
  check(dataset_index_.size() == dataset_sample_index_.size(), "{}: blend index arrays differ in length ({} vs {})",
        name_, dataset_index_.size(), dataset_sample_index_.size());
  std::vector<int64_t> used(datasets_.size(), 0);
  for (int64_t i = 0; i < dataset_index_.size(); ++i) {
    const int d = dataset_index_[i];
    check(d >= 0 && d < static_cast<int>(datasets_.size()), "{}: blend entry {} names dataset {} of {}", name_, i, d,
          datasets_.size());
    used[d] = std::max(used[d], dataset_sample_index_[i] + 1);
  }
  for (size_t d = 0; d < datasets_.size(); ++d)
    check(used[d] <= datasets_[d]->size(),
          "{}: the blend oversamples {}: it needs {} samples but the dataset has {} (raise "
          "--mid-level-dataset-surplus)",
          name_, datasets_[d]->describe(), used[d], datasets_[d]->size());
}

void BlendedDataset::read_sample(int64_t i, std::span<int32_t> out) const {
  check(i >= 0 && i < size(), "{}: sample {} out of range [0, {})", name_, i, size());
  datasets_[dataset_index_[i]]->read_sample(dataset_sample_index_[i], out);
}

std::string BlendedDataset::describe() const {
  return fmt::format("BlendedDataset({}, {} datasets, {} samples)", name_, datasets_.size(), size());
}

std::string BlendedDataset::describe_sample(int64_t i) const {
  if (i < 0 || i >= size()) return SampleDataset::describe_sample(i);
  return fmt::format("{} sample {} = dataset {} of the blend: {}", name_, i, int(dataset_index_[i]),
                     datasets_[dataset_index_[i]]->describe_sample(dataset_sample_index_[i]));
}

}  // namespace gptrain
