// --mock-data is deterministic, and the checkpoint family follows the switches. (The runner itself is
// tested in tests/unit/parallel/train_runner_test.cpp.)
#include "core/hf/family.h"
#include "core/model/model_config.h"
#include "core/train/mock_dataset.h"

#include <catch2/catch.hpp>

using namespace gptrain;

namespace {

StageConfig tiny(int B) {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.micro_batch_size = B;
  c.vocab_size = 40, c.hidden_dropout = 0.0f, c.attention_dropout = 0.0f;
  c.finalize(8);
  return c;
}

}  // namespace

TEST_CASE("train: mock data is deterministic and in range, family from switches") {
  MockSampleDataset a(10, 16, 50, 49, 7), b(10, 16, 50, 49, 7), c(10, 16, 50, 49, 8);
  std::vector<int32_t> x(17), y(17), z(17);
  a.read_sample(3, x), b.read_sample(3, y), c.read_sample(3, z);
  REQUIRE(x == y);
  REQUIRE(x != z);
  for (int32_t t : x) REQUIRE((t >= 0 && t < 50));
  StageConfig m = tiny(1);
  REQUIRE(hf::default_family(m) == "gpt2");
  m.parallel_residual = ParallelResidual::SharedNorm;
  REQUIRE(hf::default_family(m) == "gptj");
  m.parallel_residual = ParallelResidual::TwoNorms;
  REQUIRE(hf::default_family(m) == "gpt_neox");
  m.parallel_residual = ParallelResidual::None, m.normalization = Normalization::RMSNorm, m.swiglu = true;
  REQUIRE(hf::default_family(m) == "llama");
}
