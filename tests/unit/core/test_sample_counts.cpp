// Per-split sample counts as Megatron computes them (get_train_valid_test_num_samples), and the vocabulary
// a tokenizer type gives.
#include "core/common/error.h"
#include "core/train/setup.h"

#include <catch2/catch.hpp>

using namespace gptrain;

namespace {
TrainingArgs run(std::optional<int64_t> iters, std::optional<int64_t> samples, std::optional<int> eval_interval,
                 int eval_iters, int64_t gbs) {
  TrainingArgs t;
  t.train_iters = iters;
  t.train_samples = samples;
  t.eval_interval = eval_interval;
  t.eval_iters = eval_iters;
  t.global_batch_size = gbs;
  return t;
}
}  // namespace

TEST_CASE("per-split sample counts as Megatron computes them") {
  auto c = split_sample_counts(run(1000, {}, 100, 10, 32));
  CHECK(*c[0] == 32000);
  CHECK(*c[1] == 11 * 10 * 32);
  CHECK(*c[2] == 320);
  // By samples: train_iters = 1000 // 32 = 31 for the evaluation count.
  c = split_sample_counts(run({}, 1000, 10, 2, 32));
  CHECK(*c[0] == 1000);
  CHECK(*c[1] == (31 / 10 + 1) * 2 * 32);
  c = split_sample_counts(run(50, {}, {}, 0, 8));
  CHECK((*c[1] == 0 && *c[2] == 0));
  c = split_sample_counts(run(50, {}, {}, 3, 8));  // no --eval-interval: one evaluation, after training
  CHECK((*c[1] == 24 && *c[2] == 24));
  // --eval-global-batch-size sizes the valid and test splits; --skip-train evaluates once (eval_iters alone).
  TrainingArgs e = run(1000, {}, 100, 10, 32);
  e.eval_global_batch_size = 48;
  c = split_sample_counts(e);
  CHECK((*c[0] == 32000 && *c[1] == 11 * 10 * 48 && *c[2] == 10 * 48));
  e.skip_train = true;
  c = split_sample_counts(e);
  CHECK((*c[0] == 32000 && *c[1] == 10 * 48 && *c[2] == 10 * 48));
  CHECK_THROWS_AS(split_sample_counts(run(5, 5, {}, 1, 8)), Error);
  CHECK_THROWS_AS(split_sample_counts(run({}, {}, {}, 1, 8)), Error);
}

TEST_CASE("NullTokenizer takes --vocab-size ids and puts the end-of-document id after them as Megatron") {
  TrainArgs a;
  a.tokenizer.tokenizer_type = "NullTokenizer";
  CHECK_THROWS_AS(vocab_info(a), Error);  // needs --vocab-size
  a.tokenizer.vocab_size = 128256;
  const VocabInfo v = vocab_info(a);
  CHECK(v.vocab_size == 128257);
  CHECK(v.eod_token == 128256);
  a.tokenizer.vocab_file = "vocab.json";
  a.tokenizer.merge_file = "merges.txt";
  CHECK_THROWS_AS(vocab_info(a), Error);  // GPT-2 files do not belong to it
  a.tokenizer = {};
  a.tokenizer.tokenizer_type = "SentencePieceTokenizer";
  CHECK_THROWS_AS(vocab_info(a), Error);
}
