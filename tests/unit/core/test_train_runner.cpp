// The single-process runner: gradient accumulation weights micro-batches as Megatron (two micro-batches
// of 1 == one of 2), checkpoint save + load restores parameters and Adam state exactly, --mock-data is
// deterministic, and the checkpoint family follows the switches.
#include "core/checkpoint/checkpoint.h"
#include "core/model/gpt_stage.h"
#include "core/optim/adamw.h"
#include "core/train/local_runner.h"
#include "core/train/mock_dataset.h"
#include "core/train/trainer.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace gptrain;
using namespace gptrain::test;

namespace {

ModelConfig tiny(int B) {
  ModelConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.micro_batch_size = B;
  c.vocab_size = 40, c.hidden_dropout = 0.0f, c.attention_dropout = 0.0f;
  c.finalize(8);
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

TEST_CASE("train: two micro-batches of 1 accumulate like one micro-batch of 2 (full masks)") {
  auto be = make_backend("cpu", DType::F32);
  const ModelConfig c2 = tiny(2), c1 = tiny(1);
  GptStage m2(c2, *be), m1(c1, *be);
  m2.init_parameters(), m1.init_parameters();
  AdamW o2(*be, m2.params(), m2.grads(), m2.layout().total, m2.layout().num_decay, {});
  AdamW o1(*be, m1.params(), m1.grads(), m1.layout().total, m1.layout().num_decay, {});
  LocalRunner r2(m2, o2), r1(m1, o1);
  const HostMicroBatch big = random_batch(c2, 3, false);
  std::vector<HostMicroBatch> one{big}, two{rows(big, 0, 1, 8), rows(big, 1, 1, 8)};
  const LossTotals t2 = r2.train_batch(one, 1.0), t1 = r1.train_batch(two, 1.0);
  REQUIRE(t1.num_tokens == t2.num_tokens);
  REQUIRE(t1.mean() == Approx(t2.mean()).epsilon(1e-6));
  const auto g2 = to_host(*be, m2.grads(), m2.layout().total), g1 = to_host(*be, m1.grads(), m1.layout().total);
  for (std::size_t i = 0; i < g1.size(); ++i) REQUIRE(g1[i] == Approx(g2[i]).margin(1e-7).epsilon(1e-4));
  REQUIRE(r1.grad_sum_squares() == Approx(r2.grad_sum_squares()).epsilon(1e-5));
}

TEST_CASE("train: checkpoint save + load restores parameters and Adam state bitwise") {
  auto be = make_backend("cpu", DType::F32);
  const ModelConfig c = tiny(2);
  GptStage m(c, *be);
  m.init_parameters();
  AdamW opt(*be, m.params(), m.grads(), m.layout().total, m.layout().num_decay, {});
  LocalRunner r(m, opt);
  std::vector<HostMicroBatch> mbs{random_batch(c, 1)};
  r.train_batch(mbs, 1.0);
  r.optimizer_step(1e-2f, 0.1f, 1.0f);
  const std::size_t n = m.layout().total;
  const auto p0 = to_host(*be, m.params(), n), m0 = to_host(*be, opt.exp_avg(), n), v0 = to_host(*be, opt.exp_avg_sq(), n);
  const auto dir = std::filesystem::temp_directory_path() / ("gptrain_test_runner_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  checkpoint::Metadata meta;
  meta.iteration = 1;
  r.save(dir.string(), checkpoint::Step::at(1), meta, true);
  r.train_batch(mbs, 1.0);
  r.optimizer_step(1e-2f, 0.1f, 1.0f);  // move away from the saved state
  REQUIRE(to_host(*be, m.params(), n) != p0);
  r.load(checkpoint::Checkpoint::open(dir.string()), true);
  REQUIRE(to_host(*be, m.params(), n) == p0);
  REQUIRE(to_host(*be, opt.exp_avg(), n) == m0);
  REQUIRE(to_host(*be, opt.exp_avg_sq(), n) == v0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("train: mock data is deterministic and in range, family from switches") {
  MockSampleDataset a(10, 16, 50, 49, 7), b(10, 16, 50, 49, 7), c(10, 16, 50, 49, 8);
  std::vector<int32_t> x(17), y(17), z(17);
  a.read_sample(3, x), b.read_sample(3, y), c.read_sample(3, z);
  REQUIRE(x == y);
  REQUIRE(x != z);
  for (int32_t t : x) REQUIRE((t >= 0 && t < 50));
  ModelConfig m = tiny(1);
  REQUIRE(model_family(m) == "gpt2");
  m.parallel_residual = ParallelResidual::SharedNorm;
  REQUIRE(model_family(m) == "gptj");
  m.parallel_residual = ParallelResidual::TwoNorms;
  REQUIRE(model_family(m) == "gpt_neox");
  m.parallel_residual = ParallelResidual::None, m.normalization = Normalization::RMSNorm, m.swiglu = true;
  REQUIRE(model_family(m) == "llama");
}
