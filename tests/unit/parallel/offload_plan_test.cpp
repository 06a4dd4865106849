// Offloading in the memory plan (memory_plan.h, offload_plan.h): the activation offload's device
// saving is the arenas in flight it empties less its staging slots, what a live stage allocates; the
// optimizer offload moves exactly its fraction of the state (also of the distributed optimizer's
// shards); the advice is the fitting choice that copies the least per step.
#include "core/common/error.h"
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/plan/offload_plan.h"

#include <catch2/catch.hpp>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {

StageConfig tiny() {
  StageConfig c;
  c.num_layers = 6, c.hidden_size = 32, c.num_attention_heads = 4, c.seq_length = 16, c.micro_batch_size = 2;
  c.max_position_embeddings = 16;
  c.vocab_size = 100;
  return c;
}

}  // namespace

TEST_CASE("offload plan: the activation offload saves the emptied arenas less the staging slots", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  ParallelArgs o;
  o.pipeline_model_parallel_size = 2;  // stage 0: layers 0-2, 8 micro-batches -> 2 in flight under 1F1B
  StageConfig model = tiny();
  const MemoryPlan kept = memory_plan(model, 8, o, 0, 1, 8, *be);
  model.cpu_offload_layers = 2;
  const MemoryPlan p = memory_plan(model, 8, o, 0, 1, 8, *be);
  GptStage stage(chunk_model_config(model, 8, 1, 0, false, pipeline_chunks(o, model.num_layers, 0)[0]), *be);
  const std::size_t unit = StageActivations::offload_unit_bytes_for(DType::F32, stage.config(), stage.sizes());
  REQUIRE(unit > 0);
  CHECK(p.activations_per_micro_batch == stage.make_activations()->arena_bytes);
  CHECK(p.offload_staging == 2 * unit);  // two units: two slots
  CHECK(p.activations_host == 2 * unit * std::size_t(p.in_flight));
  CHECK(p.activations + p.activations_saved == kept.activations);
  CHECK(p.host_bytes_per_step == 2 * 2 * unit * 8);  // each unit down and up, for every micro-batch
  CHECK(p.optimizer_host == 0);
  CHECK(format_memory_plan(p).find("activations of the first 2 layers") != std::string::npos);
  // Stage 1 holds layers 3-5: nothing offloaded there.
  CHECK(memory_plan(model, 8, o, 1, 1, 8, *be).activations_host == 0);
}

TEST_CASE("offload plan: the optimizer offload moves its fraction, of the shards too", "[parallel]") {
  const StageConfig model = tiny();
  for (const bool distributed : {false, true}) {
    ParallelArgs o;
    o.use_distributed_optimizer = distributed;
    const MemoryPlan kept = memory_plan(model, 8, o, 0, 4, 4, DType::BF16, WorkspaceOptions{});
    o.optimizer_cpu_offload = true;
    o.optimizer_offload_fraction = 0.5;
    const MemoryPlan p = memory_plan(model, 8, o, 0, 4, 4, DType::BF16, WorkspaceOptions{});
    INFO("distributed " << distributed);
    CHECK(p.optimizer + p.optimizer_saved == kept.optimizer);
    CHECK(p.optimizer_saved * 2 == kept.optimizer);  // half of the elements (an even count here)
    // On the host: m, v, master and a gradient copy of those elements; per step gradients down (fp32)
    // and parameters up (bf16).
    CHECK(p.optimizer_host == p.optimizer_saved / 12 * 16);
    CHECK(p.host_bytes_per_step == p.optimizer_saved / 12 * 6);
    CHECK(p.total() + p.optimizer_saved == kept.total());
  }
}

TEST_CASE("offload plan: the advice is the fitting choice that copies the least", "[parallel]") {
  const StageConfig model = tiny();
  ParallelArgs o;
  const std::vector<OffloadChoice> choices = offload_choices(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{});
  REQUIRE(choices.size() == 6 * 5 - 1);  // N = 0..5 x 5 fractions, without no offloading at all
  const std::size_t none = memory_plan(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{}).total();
  const std::optional<OffloadChoice> fit = cheapest_fitting_offload(choices, none - 1);
  REQUIRE(fit.has_value());
  for (const OffloadChoice& c : choices)
    if (c.plan.total() <= none - 1) CHECK(c.plan.host_bytes_per_step >= fit->plan.host_bytes_per_step);
  std::size_t least = none;
  for (const OffloadChoice& c : choices) least = std::min(least, c.plan.total());
  CHECK_FALSE(cheapest_fitting_offload(choices, least - 1).has_value());
  MemoryPlan p = memory_plan(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{});
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, none - 1, none, "", offload_advice(*fit)),
                      Catch::Contains("offload to host memory: " + fit->flags));
}
