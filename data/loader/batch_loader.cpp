#include <fmt/format.h>

#include <algorithm>

#include "core/common/error.h"
#include "data/loader/gpt_data.h"

namespace gptrain {

BatchOptions batch_options(const DataArgs& a, int32_t eod_token, int64_t vocab_size) {
  return {eod_token, a.eod_mask_loss, a.reset_position_ids, a.reset_attention_mask, vocab_size};
}

namespace {

// A dataset tokenized with another tokenizer shows up as ids past the vocabulary; in a blend, the sample's
// dataset is what the user must find.
void check_vocabulary(const SampleDataset& d, int64_t sample, std::span<const int32_t> window, int64_t vocab) {
  for (size_t t = 0; t < window.size(); ++t)
    if (window[t] < 0 || window[t] >= vocab)
      fail(
          "{}: token id {} at position {} is outside the model's vocabulary [0, {}) (was the dataset made "
          "with another tokenizer or --vocab-size?)",
          d.describe_sample(sample), window[t], t, vocab);
}

}  // namespace

void fill_row(const int32_t* window, int T, const BatchOptions& o, int32_t* tokens, int32_t* labels,
              int32_t* position_ids, int32_t* segment_ids, float* loss_mask) {
  int32_t pos = 0, seg = 0;
  for (int t = 0; t < T; ++t) {
    const int32_t tok = window[t];
    tokens[t] = tok;
    labels[t] = window[t + 1];
    position_ids[t] = pos;
    segment_ids[t] = seg;
    const bool eod = tok == o.eod_token;
    loss_mask[t] = (o.eod_mask_loss && eod) ? 0.0f : 1.0f;
    ++pos;
    // An EOD ends its document: the next position starts a new one (position 0, next segment).
    if (eod && o.reset_position_ids) pos = 0;
    if (eod && o.reset_attention_mask) ++seg;
  }
}

GPTBatchLoader::GPTBatchLoader(std::shared_ptr<const SampleDataset> dataset, BatchShape shape, BatchOptions options)
    : dataset_(std::move(dataset)), shape_(shape), options_(options) {
  check(dataset_ != nullptr, "GPTBatchLoader: no dataset");
  check(shape_.micro_batch_size > 0 && shape_.dp_size > 0,
        "--micro-batch-size and the data-parallel size must be "
        "positive (got {} and {})",
        shape_.micro_batch_size, shape_.dp_size);
  check(shape_.dp_rank >= 0 && shape_.dp_rank < shape_.dp_size, "data-parallel rank {} outside [0, {})", shape_.dp_rank,
        shape_.dp_size);
  const int64_t round = static_cast<int64_t>(shape_.micro_batch_size) * shape_.dp_size;
  check(shape_.global_batch_size > 0 && shape_.global_batch_size % round == 0,
        "--global-batch-size {} must be a positive multiple of --micro-batch-size x data-parallel size = {}",
        shape_.global_batch_size, round);
  num_micro_ = static_cast<int>(shape_.global_batch_size / round);
}

std::vector<int64_t> GPTBatchLoader::sample_ids(int64_t consumed, int k) const {
  check(k >= 0 && k < num_micro_, "micro-batch {} outside [0, {})", k, num_micro_);
  check(consumed >= 0, "consumed samples must be >= 0, got {}", consumed);
  const int64_t mbs = shape_.micro_batch_size;
  const int64_t first = consumed + static_cast<int64_t>(k) * mbs * shape_.dp_size + shape_.dp_rank * mbs;
  check(first + mbs <= dataset_->size(),
        "{} is exhausted: micro-batch needs samples [{}, {}) but it has {} (Megatron's sampler would stop here; "
        "the requested sample counts are too small for this many iterations)",
        dataset_->describe(), first, first + mbs, dataset_->size());
  std::vector<int64_t> ids(static_cast<size_t>(mbs));
  for (int64_t b = 0; b < mbs; ++b) ids[b] = first + b;
  return ids;
}

void GPTBatchLoader::fill(MicroBatch& mb, int64_t consumed, int k) const {
  fill_rows(mb, sample_ids(consumed, k), shape_.micro_batch_size);
}

void GPTBatchLoader::fill_rows(MicroBatch& mb, std::vector<int64_t> ids, int real_rows) const {
  const int B = shape_.micro_batch_size;
  const int T = static_cast<int>(dataset_->seq_length());
  const size_t n = static_cast<size_t>(B) * T;
  mb.B = B;
  mb.T = T;
  mb.tokens.resize(n);
  mb.labels.resize(n);
  mb.position_ids.resize(n);
  mb.segment_ids.resize(n);
  mb.loss_mask.resize(n);
  mb.sample_ids = std::move(ids);
  std::vector<int32_t> window(static_cast<size_t>(T) + 1);
  for (int b = 0; b < B; ++b) {
    dataset_->read_sample(mb.sample_ids[b], window);
    if (options_.vocab_size > 0) check_vocabulary(*dataset_, mb.sample_ids[b], window, options_.vocab_size);
    const size_t o = static_cast<size_t>(b) * T;
    fill_row(window.data(), T, options_, &mb.tokens[o], &mb.labels[o], &mb.position_ids[o], &mb.segment_ids[o],
             &mb.loss_mask[o]);
    if (b >= real_rows) std::fill(mb.loss_mask.begin() + long(o), mb.loss_mask.begin() + long(o + T), 0.0f);
  }
}

void GPTBatchLoader::fill_range(MicroBatch& mb, int64_t first, int64_t end) const {
  check(first >= 0 && end <= dataset_->size(), "rows [{}, {}) outside {}", first, end, dataset_->describe());
  const int B = shape_.micro_batch_size;
  std::vector<int64_t> ids(static_cast<size_t>(B));
  int real_rows = 0;
  for (int b = 0; b < B; ++b) {
    ids[b] = first + b < end ? first + b : 0;
    real_rows += first + b < end;
  }
  fill_rows(mb, std::move(ids), real_rows);
}

MicroBatch GPTBatchLoader::micro_batch(int64_t consumed, int k) const {
  MicroBatch mb;
  fill(mb, consumed, k);
  return mb;
}

}  // namespace gptrain
