// The training runner in a world of one (what pretrain_gpt runs without a launcher): gradient
// accumulation weights micro-batches as Megatron (two micro-batches of 1 == one of 2), per-token loss
// normalization (--calculate-per-token-loss) weights every loss token of the batch alike, a checkpoint save +
// load restores parameters and Adam state exactly, and the runner's AdamW step is the plain AdamW update.
#include "core/checkpoint/checkpoint.h"
#include "tests/unit/core/model_test_util.h"
#include "world_of_one.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

using namespace gptrain;
using namespace gptrain::test;

namespace {

StageConfig tiny(int B) {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.micro_batch_size = B;
  c.vocab_size = 40, c.hidden_dropout = 0.0f, c.attention_dropout = 0.0f;
  return c;
}

HostMicroBatch rows(const HostMicroBatch& mb, int first, int count, int T) {
  HostMicroBatch r;
  auto cut = [&](const auto& v) { return std::vector(v.begin() + first * T, v.begin() + (first + count) * T); };
  r.tokens = cut(mb.tokens), r.labels = cut(mb.labels), r.loss_mask = cut(mb.loss_mask);
  r.position_ids = cut(mb.position_ids);
  return r;
}

}  // namespace

TEST_CASE("train runner: two micro-batches of 1 accumulate like one micro-batch of 2 (full masks)") {
  auto be = make_backend("cpu", DType::F32);
  WorldOfOne w2(*be, tiny(2), 8), w1(*be, tiny(1), 8);
  StageConfig c2 = tiny(2);
  c2.finalize(8);
  const HostMicroBatch big = random_batch(c2, 3, false);
  std::vector<HostMicroBatch> one{big}, two{rows(big, 0, 1, 8), rows(big, 1, 1, 8)};
  const LossTotals t2 = w2.runner->train_batch(one, 1.0, LossNormalization::per_micro_batch);
  const LossTotals t1 = w1.runner->train_batch(two, 1.0, LossNormalization::per_micro_batch);
  REQUIRE(t1.num_tokens == t2.num_tokens);
  REQUIRE(t1.mean() == Approx(t2.mean()).epsilon(1e-6));
  const std::size_t n = w1.stage().layout().total;
  const auto g2 = to_host(*be, w2.stage().grads(), n), g1 = to_host(*be, w1.stage().grads(), n);
  for (std::size_t i = 0; i < g1.size(); ++i) REQUIRE(g1[i] == Approx(g2[i]).margin(1e-7).epsilon(1e-4));
  REQUIRE(w1.runner->grad_sum_squares() == Approx(w2.runner->grad_sum_squares()).epsilon(1e-5));
  // One process counts every element once, in one pass over the whole gradient buffer.
  REQUIRE(w1.runner->grad_sum_squares() == be->sum_squares(w1.stage().grads(), n));
}

namespace {

// Largest |a - b| / max(|b|, floor) over the two gradient buffers.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b, double floor = 1e-4) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(double(a[i]) - double(b[i])) / std::max(std::abs(double(b[i])), floor));
  return m;
}

}  // namespace

TEST_CASE("train runner: per-token loss weights every loss token of the global batch alike") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig c2 = tiny(2);
  c2.finalize(8);
  HostMicroBatch big = random_batch(c2, 4, false);
  for (int t = 0; t < 5; ++t) big.loss_mask[t] = 0.0f;  // row 0: 3 loss tokens, row 1: 8
  std::vector<HostMicroBatch> one{big}, two{rows(big, 0, 1, 8), rows(big, 1, 1, 8)};
  WorldOfOne whole(*be, tiny(2), 8), per_token(*be, tiny(1), 8), per_micro_batch(*be, tiny(1), 8);
  // One micro-batch of both rows: its token mean is the per-token loss of the whole batch.
  const LossTotals tw = whole.runner->train_batch(one, 1.0, LossNormalization::per_micro_batch);
  const LossTotals tp = per_token.runner->train_batch(two, 1.0, LossNormalization::per_token);
  const LossTotals tm = per_micro_batch.runner->train_batch(two, 1.0, LossNormalization::per_micro_batch);
  // The reported loss is the batch's token mean either way.
  REQUIRE(tp.num_tokens == 11.0);
  REQUIRE(tp.loss_sum == tm.loss_sum);
  REQUIRE(tp.mean() == Approx(tw.mean()).epsilon(1e-6));
  const std::size_t n = whole.stage().layout().total;
  const auto gw = to_host(*be, whole.stage().grads(), n), gp = to_host(*be, per_token.stage().grads(), n),
             gm = to_host(*be, per_micro_batch.stage().grads(), n);
  CHECK(max_rel_diff(gp, gw) < 1e-3);
  // The default (mean of the two micro-batch means) weights row 0's tokens 8/3 times row 1's: a
  // different gradient, so the check above can tell the two apart.
  CHECK(max_rel_diff(gm, gw) > 5e-2);
}

TEST_CASE("train runner: per-token loss gives the default's bits when micro-batches hold equal token counts") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig c2 = tiny(2);
  c2.finalize(8);
  HostMicroBatch big = random_batch(c2, 6, false);
  big.loss_mask[2] = big.loss_mask[8 + 5] = 0.0f;  // 7 loss tokens in each row
  std::vector<HostMicroBatch> two{rows(big, 0, 1, 8), rows(big, 1, 1, 8)};
  WorldOfOne a(*be, tiny(1), 8), b(*be, tiny(1), 8);
  a.runner->train_batch(two, 1.0, LossNormalization::per_token);
  b.runner->train_batch(two, 1.0, LossNormalization::per_micro_batch);
  const std::size_t n = a.stage().layout().total;
  REQUIRE(to_host(*be, a.stage().grads(), n) == to_host(*be, b.stage().grads(), n));
}

TEST_CASE("train runner: the optimizer step is AdamW over the whole buffer") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig c = tiny(2);
  WorldOfOne w(*be, c, 8, {}, AdamWHyper{0.8f, 0.95f, 1e-6f});
  c.finalize(8);
  GptStage ref(c, *be);
  ref.init_parameters();
  AdamW ref_opt(*be, ref.params(), ref.layout().total, ref.layout().num_decay, AdamWHyper{0.8f, 0.95f, 1e-6f});
  std::vector<HostMicroBatch> mbs{random_batch(c, 5)};
  w.runner->train_batch(mbs, 1.0, LossNormalization::per_micro_batch);
  const std::size_t n = ref.layout().total;
  const auto grads = to_host(*be, w.stage().grads(), n);
  be->copy_to_device(ref.grads(), grads.data(), n * 4);
  for (int step = 0; step < 2; ++step) {
    w.runner->optimizer_step(1e-2f, 1e-2f, 0.1f, 0.5f);
    ref_opt.step(ref.grads(), 1e-2f, 0.1f, 0.5f);
  }
  REQUIRE(w.runner->optimizer_steps() == 2);
  REQUIRE(to_host(*be, w.stage().params(), n) == to_host(*be, ref.params(), n));
}

TEST_CASE("train runner: checkpoint save + load restores parameters and Adam state bitwise") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig c = tiny(2);
  WorldOfOne w(*be, c, 8);
  c.finalize(8);
  std::vector<HostMicroBatch> mbs{random_batch(c, 1)};
  w.runner->train_batch(mbs, 1.0, LossNormalization::per_micro_batch);
  w.runner->optimizer_step(1e-2f, 1e-2f, 0.1f, 1.0f);
  const std::size_t n = w.stage().layout().total;
  auto moments = [&](int which) { return w.opt->gather_moments(0, which); };
  const auto p0 = to_host(*be, w.stage().params(), n), m0 = moments(0), v0 = moments(1);
  const auto dir = std::filesystem::temp_directory_path() / ("gptrain_test_runner_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  checkpoint::Metadata meta;
  meta.iteration = 1;
  w.runner->save(dir.string(), checkpoint::Step::at(1), meta, true);
  w.runner->train_batch(mbs, 1.0, LossNormalization::per_micro_batch);
  w.runner->optimizer_step(1e-2f, 1e-2f, 0.1f, 1.0f);  // move away from the saved state
  REQUIRE(to_host(*be, w.stage().params(), n) != p0);
  w.runner->load(checkpoint::Checkpoint::open(dir.string()), true);
  REQUIRE(to_host(*be, w.stage().params(), n) == p0);
  REQUIRE(moments(0) == m0);
  REQUIRE(moments(1) == v0);
  std::filesystem::remove_all(dir);
}
