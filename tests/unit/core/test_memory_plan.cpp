// The memory plan counts the arenas the model actually allocates: fp32 parameters are 4 bytes each,
// the activation estimate equals the arena a runner allocates, AdamW holds two fp32 moments.
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "core/optim/adamw.h"
#include "core/train/memory_plan.h"
#include "kernels/backend.h"

#include <catch2/catch.hpp>

#include <string>

using namespace gptrain;

TEST_CASE("memory plan: fp32 CPU model, bytes from the real arenas") {
  auto be = make_backend("cpu", DType::F32);
  ModelConfig cfg;
  cfg.num_layers = 2, cfg.hidden_size = 32, cfg.num_attention_heads = 2, cfg.seq_length = 16, cfg.micro_batch_size = 2;
  cfg.vocab_size = 100;
  cfg.finalize(8);
  GptStage stage(cfg, *be);
  AdamW opt(*be, stage.params(), stage.grads(), stage.layout().total, stage.layout().num_decay, AdamWHyper{});
  const MemoryPlan p = memory_plan(stage, opt, 2);
  const std::size_t n = stage.layout().total;
  REQUIRE(n > 0);
  REQUIRE(p.parameters == 4 * n);
  REQUIRE(p.gradients == 4 * n);
  REQUIRE(p.optimizer == 8 * n);  // m and v; fp32 parameters are their own masters
  REQUIRE_FALSE(p.master_weights);
  auto acts = stage.make_activations();
  REQUIRE(p.activations_each == acts->arena_bytes);
  REQUIRE(p.activations_each > 0);
  REQUIRE(p.total() == 16 * n + 2 * acts->arena_bytes);
  const std::string line = format_memory_plan(p);
  REQUIRE(line.find("memory plan: parameters ") == 0);
  REQUIRE(line.find("x 2 in flight") != std::string::npos);
}

TEST_CASE("memory plan: the allocation-free plan (--dry-run) equals the plan of the allocated model") {
  auto be = make_backend("cpu", DType::F32);
  ModelConfig cfg;
  cfg.num_layers = 2, cfg.hidden_size = 32, cfg.num_attention_heads = 4, cfg.seq_length = 16, cfg.micro_batch_size = 2;
  cfg.vocab_size = 100, cfg.parallel_residual = ParallelResidual::SharedNorm, cfg.disable_bias_attention = true;
  cfg.position_embedding = PositionEmbedding::Rope, cfg.untie_embeddings_and_output_weights = true;
  cfg.finalize(8);
  GptStage stage(cfg, *be);
  AdamW opt(*be, stage.params(), stage.grads(), stage.layout().total, stage.layout().num_decay, AdamWHyper{});
  const MemoryPlan real = memory_plan(stage, opt, 3);
  const MemoryPlan dry = memory_plan_for(cfg, DType::F32, stage.layout().total, 3, WorkspaceOptions{});
  REQUIRE(dry.parameters == real.parameters);
  REQUIRE(dry.gradients == real.gradients);
  REQUIRE(dry.optimizer == real.optimizer);
  REQUIRE(dry.activations_each == real.activations_each);
  REQUIRE(dry.total() == real.total());
  // bf16 compute: 2-byte parameters, fp32 masters next to the moments, a smaller activation arena.
  const MemoryPlan bf = memory_plan_for(cfg, DType::BF16, stage.layout().total, 1, WorkspaceOptions{});
  REQUIRE(bf.parameters == 2 * stage.layout().total);
  REQUIRE(bf.master_weights);
  REQUIRE(bf.optimizer == 12 * stage.layout().total);
  REQUIRE(bf.activations_each < real.activations_each);
}
