#include "data/gpt_dataset/gpt_dataset.h"

#include <fmt/format.h>

#include "core/common/error.h"

namespace gptrain {

GPTDataset::GPTDataset(std::shared_ptr<const TokenSource> tokens, SplitKind split, SeqRange range,
                       GPTIndexParams params, GPTIndex index)
    : tokens_(std::move(tokens)), split_(split), range_(range), params_(params), index_(std::move(index)) {}

void GPTDataset::read_sample(int64_t i, std::span<int32_t> out) const {
  const int64_t window = params_.seq_length + params_.add_extra_token;
  check(i >= 0 && i < size(), "{}: sample {} out of range [0, {})", describe(), i, size());
  check(static_cast<int64_t>(out.size()) == window, "read_sample: buffer holds {} tokens, window is {}", out.size(),
        window);
  const int64_t k = index_.shuffle_index[i];
  const int64_t d0 = index_.sample_index[2 * k], o0 = index_.sample_index[2 * k + 1];
  const int64_t d1 = index_.sample_index[2 * k + 2], o1 = index_.sample_index[2 * k + 3];
  const auto lengths = tokens_->sequence_lengths();
  int64_t filled = 0;
  for (int64_t d = d0; d <= d1; ++d) {
    const int64_t seq = index_.document_index[d];
    const int64_t from = (d == d0) ? o0 : 0;
    const int64_t to = (d == d1) ? o1 + params_.add_extra_token : lengths[seq];
    const int64_t count = to - from;
    check(count >= 0 && filled + count <= window, "{}: corrupt index at sample {} (sequence {}, [{}, {}))", describe(),
          i, seq, from, to);
    if (count > 0) tokens_->read(seq, from, count, out.data() + filled);
    filled += count;
  }
  check(filled == window, "{}: sample {} has {} tokens, expected {} (corrupt index)", describe(), i, filled, window);
}

std::string GPTDataset::describe() const {
  return fmt::format("GPTDataset({}, {}, sequences [{}, {}), {} samples)", tokens_->path(), split_name(split_),
                     range_.begin, range_.end, size());
}

std::string SampleDataset::describe_sample(int64_t i) const { return fmt::format("{} sample {}", describe(), i); }

std::string GPTDataset::describe_sample(int64_t i) const {
  if (i < 0 || i >= size()) return SampleDataset::describe_sample(i);
  const int64_t k = index_.shuffle_index[i];
  const int64_t d0 = index_.sample_index[2 * k], d1 = index_.sample_index[2 * k + 2];
  std::string seqs;
  for (int64_t d = d0; d <= d1 && d - d0 < 8; ++d)
    seqs += fmt::format("{}{}", d == d0 ? "" : ", ", index_.document_index[d]);
  if (d1 - d0 >= 8) seqs += ", ...";
  return fmt::format("{} ({} split) sample {} (sequences {} of the file)", tokens_->path(), split_name(split_), i,
                     seqs);
}

}  // namespace gptrain
