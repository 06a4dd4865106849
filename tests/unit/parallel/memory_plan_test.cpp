// The memory plan (memory_plan.h) against the real arenas and simple invariants: a world of one plans
// exactly what the training path allocates, the
// pipeline stages' parameters add up to the whole model (plus the tied copy), the distributed
// optimizer holds 1/DP of the moments, activations are the schedule's in-flight arenas, context parallelism
// splits them and counts its K/V ring, and an
// oversized plan names the flag to change.
#include "core/common/error.h"
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "core/optim/param_groups.h"
#include "parallel/context/context_parallel_hooks.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/plan/expert_exchange.h"
#include "parallel/data_parallel/muon_optimizer.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/plan/recompute_plan.h"
#include "world_of_one.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fmt/format.h>

#include <optional>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {

StageConfig tiny(bool llama) {
  StageConfig c;
  c.num_layers = 4, c.hidden_size = 32, c.num_attention_heads = 4, c.seq_length = 16, c.micro_batch_size = 2;
  c.max_position_embeddings = 16;
  c.vocab_size = 100;
  if (llama) {
    c.normalization = Normalization::RMSNorm;
    c.position_embedding = PositionEmbedding::Rope;
    c.swiglu = true;
    c.add_bias_linear = false;
    c.num_query_groups = 2;
    c.untie_embeddings_and_output_weights = true;
  }
  return c;
}

std::size_t whole_model_elements(const StageConfig& model) {
  StageConfig c = model;
  c.finalize(8);
  return build_param_layout(c).total;
}

}  // namespace

TEST_CASE("memory plan: pipeline stages add up to the whole model", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  for (bool llama : {false, true}) {
    const StageConfig model = tiny(llama);
    StageConfig fin = model;
    fin.finalize(8);
    // The last stage of a tied model holds a second copy of the word embeddings.
    const std::size_t tied = llama ? 0 : std::size_t(fin.padded_vocab_size) * fin.hidden_size;
    const std::size_t whole = whole_model_elements(model);
    struct Layout {
      int pp;
      std::optional<int> virtual_layers, first, last;
    };
    for (const Layout& l : {Layout{1, {}, {}, {}}, Layout{2, {}, {}, {}}, Layout{4, {}, {}, {}}, Layout{2, 1, {}, {}},
                            Layout{3, {}, 1, 2}}) {
      ParallelArgs o;
      o.pipeline_model_parallel_size = l.pp;
      o.num_layers_per_virtual_pipeline_stage = l.virtual_layers;
      o.decoder_first_pipeline_num_layers = l.first;
      o.decoder_last_pipeline_num_layers = l.last;
      std::size_t sum = 0;
      for (int r = 0; r < l.pp; ++r) {
        const MemoryPlan p = memory_plan(model, 8, o, r, 1, 4, *be);
        CHECK(p.parameters == 4 * p.param_elements);
        CHECK(p.gradients == 4 * p.param_elements);
        CHECK(p.optimizer == 8 * p.param_elements);
        sum += p.param_elements;
      }
      INFO("llama " << llama << " pp " << l.pp);
      CHECK(sum == whole + (l.pp > 1 ? tied : 0));
    }
  }
}

TEST_CASE("memory plan: the distributed optimizer holds 1/DP of the moments", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  const StageConfig model = tiny(false);
  ParallelArgs o;
  o.pipeline_model_parallel_size = 2;
  for (int dp : {2, 4}) {
    const MemoryPlan full = memory_plan(model, 8, o, 1, dp, 4, *be);
    o.use_distributed_optimizer = true;
    const MemoryPlan sharded = memory_plan(model, 8, o, 1, dp, 4, *be);
    o.use_distributed_optimizer = false;
    // One chunk below the default --ddp-bucket-size: two gradient buckets (the weight-decayed
    // tensors, the others), each padded to DP equal shards.
    const ParamLayout L =
        build_param_layout(chunk_model_config(model, 8, 1, 0, false, pipeline_chunks(o, model.num_layers, 1)[0]));
    REQUIRE(L.total == full.param_elements);
    const std::size_t shard = (L.num_decay + dp - 1) / dp + (L.total - L.num_decay + dp - 1) / dp;
    CHECK(sharded.optimizer == 8 * shard);
    CHECK(sharded.optimizer * dp >= full.optimizer);
    CHECK(sharded.optimizer * dp < full.optimizer + 2 * 8 * std::size_t(dp));
    CHECK(sharded.parameters == full.parameters);  // parameters and gradients stay whole
    CHECK(sharded.gradients == full.gradients);
    // Workspace: + padded gradient copy and gathered parameters (shard x DP each) and the reduced shard.
    CHECK(sharded.workspace == full.workspace + shard * 4 + shard * dp * 8);
    // --grad-reduce-in-bf16: the bf16 copies the buckets are reduced through (the whole chunk; padded
    // blocks and shards when sharded).
    o.grad_reduce_in_bf16 = true;
    CHECK(memory_plan(model, 8, o, 1, dp, 4, *be).workspace == full.workspace + 2 * L.total);
    o.use_distributed_optimizer = true;
    CHECK(memory_plan(model, 8, o, 1, dp, 4, *be).workspace == sharded.workspace + 2 * shard * (dp + 1));
    ParallelArgs no_bf16 = o;
    no_bf16.grad_reduce_in_bf16 = false;
    CHECK(memory_plan(model, 8, o, 1, 1, 4, *be).workspace ==
          memory_plan(model, 8, no_bf16, 1, 1, 4, *be).workspace);  // DP 1 reduces nothing
    o.use_distributed_optimizer = false;
    o.grad_reduce_in_bf16 = false;
    CHECK(format_memory_plan(sharded).find(fmt::format("sharded over {} data-parallel ranks", dp)) !=
          std::string::npos);
  }
}

TEST_CASE("memory plan: hybrid sharding holds the shards of DP / N ranks and counts their traffic", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  const StageConfig model = tiny(false);
  ParallelArgs o;
  o.use_distributed_optimizer = true;
  const MemoryPlan dp2 = memory_plan(model, 8, o, 0, 2, 4, *be);
  const MemoryPlan dp4 = memory_plan(model, 8, o, 0, 4, 4, *be);
  o.num_distributed_optimizer_instances = 2;
  const MemoryPlan hybrid = memory_plan(model, 8, o, 0, 4, 4, *be);
  // DP 4 as 2 instances of 2: each rank holds what a DP 2 rank holds, more than a DP 4 rank.
  CHECK(hybrid.optimizer == dp2.optimizer);
  CHECK(hybrid.workspace == dp2.workspace);
  CHECK(hybrid.optimizer > dp4.optimizer);
  CHECK(format_memory_plan(hybrid).find("sharded over 2 data-parallel ranks") != std::string::npos);
  CHECK(format_memory_plan(hybrid).find("each of 2 distributed-optimizer instances holds a replica") !=
        std::string::npos);
  // Traffic: the reduce-scatter and gather inside an instance as DP 2's, plus the shards' all-reduce over 2.
  const std::size_t shard = dp2.optimizer / 8;  // fp32 m and v per shard element
  CHECK(hybrid.dp_grad_bytes == dp2.dp_grad_bytes);
  CHECK(hybrid.dp_gather_bytes == dp2.dp_gather_bytes);
  CHECK(hybrid.dp_inter_bytes == 2 * (shard * 4 / 2));
  CHECK(dp2.dp_grad_bytes == shard * 2 * 4 / 2);  // (n-1)/n of the padded fp32 buckets
  CHECK(format_memory_plan(hybrid).find("shard all-reduce across 2 instances") != std::string::npos);
  // Plain DP: twice (n-1)/n of the gradients per all-reduce.
  ParallelArgs plain;
  const MemoryPlan ddp = memory_plan(model, 8, plain, 0, 4, 4, *be);
  CHECK(ddp.dp_grad_bytes == 2 * (ddp.gradients / 4 * 3));
  CHECK(format_memory_plan(memory_plan(model, 8, plain, 0, 1, 4, *be)).find("data-parallel traffic") ==
        std::string::npos);
}

TEST_CASE("memory plan: activations are the schedule's in-flight arenas", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  const StageConfig model = tiny(false);
  ParallelArgs o;
  o.pipeline_model_parallel_size = 4;
  for (int r = 0; r < 4; ++r) CHECK(pipeline_peak_in_flight(4, r, 8, 1)[0] == 4 - r);  // 1F1B: PP - rank
  CHECK(pipeline_peak_in_flight(4, 0, 2, 1)[0] == 2);  // never more than the micro-batches
  for (int r : {0, 3}) {
    const MemoryPlan p = memory_plan(model, 8, o, r, 1, 8, *be);
    const ChunkRange range = pipeline_chunks(o, model.num_layers, r)[0];
    GptStage stage(chunk_model_config(model, 8, 1, 0, false, range), *be);
    CHECK(stage.layout().total == p.param_elements);
    const std::size_t arena = stage.make_activations()->arena_bytes;
    CHECK(p.in_flight == 4 - r);
    CHECK(p.activations == arena * std::size_t(4 - r));
    const LocalSizes& s = stage.sizes();
    CHECK(p.workspace == 2 * std::size_t(s.N_seq) * s.C * 4);  // the two receive buffers
    CHECK(p.total() == p.parameters + p.gradients + p.optimizer + p.activations + p.workspace);
  }
}

TEST_CASE("memory plan: with recomputation, the smaller arenas in flight plus one replay workspace", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  ParallelArgs o;
  o.pipeline_model_parallel_size = 2;
  for (const auto& [method, n] : {std::pair{RecomputeMethod::Uniform, 1}, {RecomputeMethod::Block, 1}}) {
    StageConfig model = tiny(false);
    model.recompute.granularity = RecomputeGranularity::Full;
    model.recompute.method = method;
    model.recompute.num_layers = n;
    const MemoryPlan kept = memory_plan(tiny(false), 8, o, 0, 1, 8, *be);
    const MemoryPlan p = memory_plan(model, 8, o, 0, 1, 8, *be);
    GptStage stage(chunk_model_config(model, 8, 1, 0, false, pipeline_chunks(o, model.num_layers, 0)[0]), *be);
    const std::size_t ws = StageActivations::replay_workspace_bytes_for(DType::F32, stage.config(), stage.sizes());
    CHECK(ws > 0);
    CHECK(p.replay_workspace == ws);
    CHECK(p.activations_per_micro_batch == stage.make_activations()->arena_bytes);
    CHECK(p.activations == p.activations_per_micro_batch * std::size_t(p.in_flight) + ws);
    CHECK(p.activations < kept.activations);
    CHECK(format_memory_plan(p).find("recompute full ") != std::string::npos);
  }
}

TEST_CASE("memory plan: the cheapest recomputation that fits is named", "[parallel]") {
  StageConfig model = tiny(false);
  ParallelArgs o;
  const std::vector<RecomputeChoice> choices = recompute_choices(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{});
  REQUIRE(choices.size() == 4 + 2 * std::size_t(model.num_layers));  // none, 3 selective, uniform and block N
  CHECK(choices[0].flags.empty());
  CHECK(choices[0].extra_forward == 0.0);
  // Memory just under "none" but above selective core_attn: selective (the cheapest) is named.
  const std::size_t none = choices[0].plan.total(), sel = choices[1].plan.total();
  REQUIRE(sel < none);
  const std::optional<RecomputeChoice> fit = cheapest_fitting_recompute(choices, none - 1);
  REQUIRE(fit.has_value());
  CHECK(fit->flags == "--recompute-granularity selective");
  // Below every choice's plan: nothing fits.
  std::size_t least = none;
  for (const RecomputeChoice& c : choices) least = std::min(least, c.plan.total());
  CHECK_FALSE(cheapest_fitting_recompute(choices, least - 1).has_value());
  // At exactly the least: the cheapest choice with that memory (full recomputes every layer: 100%).
  const std::optional<RecomputeChoice> last = cheapest_fitting_recompute(choices, least);
  REQUIRE(last.has_value());
  CHECK(last->plan.total() == least);
  for (const RecomputeChoice& c : choices)
    if (c.plan.total() <= least) CHECK(c.extra_forward >= last->extra_forward);
  MemoryPlan p = choices[0].plan;
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, none - 1, none, fit->flags),
                      Catch::Contains("it fits with --recompute-granularity selective"));
}

TEST_CASE("memory plan: full recomputation is planned for every N up to 16, then a spread up to all layers",
          "[parallel]") {
  for (int most : {0, 1, 4, 16}) {
    std::vector<int> all;
    for (int n = 1; n <= most; ++n) all.push_back(n);
    CHECK(full_recompute_layer_counts(most) == all);
  }
  // Thousands of layers: a bounded number of plans (the choices stay linear in the layers), with 1, half and all.
  const std::vector<int> ns = full_recompute_layer_counts(2000);
  CHECK(ns.size() <= 32);
  CHECK(std::is_sorted(ns.begin(), ns.end()));
  for (int n : {1, 16, 1000, 2000}) CHECK(std::find(ns.begin(), ns.end(), n) != ns.end());
  // The stage's choices and their plans agree with planning each configuration alone.
  StageConfig model = tiny(false);
  model.num_layers = 40;
  ParallelArgs o;
  const std::vector<RecomputeChoice> choices = recompute_choices(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{});
  REQUIRE(choices.size() == 4 + 2 * full_recompute_layer_counts(40).size());
  for (const RecomputeChoice& c : choices) {
    StageConfig m = model;
    m.recompute = c.recompute;
    CHECK(c.plan.total() == memory_plan(m, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{}).total());
  }
}

TEST_CASE("memory plan: a plan that does not fit names the flag to change", "[parallel]") {
  MemoryPlan p;
  p.parameters = p.gradients = 100;
  p.optimizer = 200;
  p.activations = 1000;
  p.dp_size = 2;
  p.tp_size = 2;
  check_memory_plan_fits(p, 1400, 2000);  // fits: no error
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 1399, 2000),
                      Catch::Contains("--micro-batch-size") && Catch::Contains("--sequence-parallel"));
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 300, 2000), Catch::Contains("--use-distributed-optimizer") &&
                                                                Catch::Contains("--pipeline-model-parallel-size"));
  p.distributed_optimizer = true;
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 300, 2000), !Catch::Contains("--use-distributed-optimizer"));
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 300, 2000), !Catch::Contains("--num-distributed-optimizer-instances"));
  // Hybrid sharding: fewer instances shard the optimizer state over more ranks.
  p.dp_size = 8;
  p.dist_opt_instances = 4;
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 300, 2000),
                      Catch::Contains("a lower --num-distributed-optimizer-instances (now 4: sharded over 2 of the 8 "
                                      "data-parallel ranks)"));
  p.dp_size = 2;
  p.dist_opt_instances = 1;
  // The CPU backend names the process's limit instead of a device.
  REQUIRE_THROWS_WITH(check_memory_plan_fits(p, 300, 300, "", "", "left under the cgroup's memory limit (x)"),
                      Catch::Contains("but this process has") && Catch::Contains("cgroup's memory limit (x)") &&
                          !Catch::Contains("device"));
  // Under ulimit -v the plan and the backend's reserved address space must fit.
  check_cpu_address_space(p, std::nullopt);
  check_cpu_address_space(p, p.total() + kCpuBackendAddressReserve);
  REQUIRE_THROWS_WITH(check_cpu_address_space(p, p.total() + kCpuBackendAddressReserve - 1),
                      Catch::Contains("ulimit -v"));
}

TEST_CASE("memory plan: the CUDA backend's workspace is its estimate for the stage", "[parallel]") {
  StageConfig model = tiny(false);
  model.attention_dropout = 0.0f;  // a shape cuDNN attention can run
  StageConfig fin = model;
  fin.finalize(8);
  WorkspaceOptions ws;
  ws.backend = "cuda";
  ParallelArgs o;  // one stage, one rank
  const MemoryPlan cpu = memory_plan(model, 8, o, 0, 1, 4, DType::BF16, WorkspaceOptions{});
  const MemoryPlan gpu = memory_plan(model, 8, o, 0, 1, 4, DType::BF16, ws);
  const BackendWorkspace stage = backend_workspace(fin, DType::BF16, ws, build_param_layout(fin).total);
  CHECK(cpu.backend.total() == 0);
  CHECK(cpu.workspace == 0);  // one stage: no pipeline receive buffers
  CHECK(gpu.backend.total() == stage.total());
  CHECK(gpu.backend.total() >= kCublasLtWorkspaceBytes);
  CHECK(gpu.workspace == cpu.workspace + stage.total());
  CHECK(format_memory_plan(gpu).find("(backend: 32.00 MiB cuBLASLt + ") != std::string::npos);
  CHECK(format_memory_plan(gpu).find("workspace >= ") != std::string::npos);  // cuDNN's plan workspace
}

TEST_CASE("memory plan: a sliding window leaves cuDNN's workspace out and cuts the attention FLOPs", "[parallel]") {
  StageConfig model = tiny(false);
  model.attention_dropout = 0.0f;  // a shape cuDNN attention can run
  model.finalize(8);
  WorkspaceOptions ws;
  ws.backend = "cuda";
  const std::size_t params = build_param_layout(model).total;
  CHECK(backend_workspace(model, DType::BF16, ws, params).attention > 0);
  StageConfig windowed = model;
  windowed.window_size = 3;  // of T = 16: every layer on the own kernels, no cuDNN backward scratch
  CHECK(backend_workspace(windowed, DType::BF16, ws, params).attention == 0);
  windowed.window_attn_skip_freq = 2;  // layers 2 and 4 keep full attention: cuDNN may run them
  CHECK(backend_workspace(windowed, DType::BF16, ws, params).attention > 0);
  StageConfig wide = model;
  wide.window_size = 15;  // T - 1: hides nothing
  CHECK(layer_forward_flops(wide, 0) == layer_forward_flops(model, 0));
  // Window 3 of T 16: 4*5/2 + 12*4 = 58 (query, key) pairs instead of T^2/2 = 128, each 4 ATT FLOPs per sequence.
  const LocalSizes s = local_sizes(model);
  const double saved = 4.0 * s.B * s.ATT * (128 - 58);
  CHECK(layer_forward_flops(model, 0) - layer_forward_flops(windowed, 0) == Approx(saved));
  CHECK(layer_forward_flops(windowed, 1) == layer_forward_flops(model, 1));  // layer 2: full attention
}

TEST_CASE("memory plan: a world of one plans exactly the arenas the training path allocates", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  for (bool llama : {false, true}) {
    const StageConfig model = tiny(llama);
    test::WorldOfOne w(*be, model, 8);
    const MemoryPlan p = memory_plan(model, 8, ParallelArgs{}, 0, 1, 2, *be);
    const std::size_t n = w.stage().layout().total;
    REQUIRE(n > 0);
    CHECK(p.param_elements == n);
    CHECK(p.parameters == 4 * n);
    CHECK(p.gradients == 4 * n);
    CHECK(p.optimizer == 8 * n);  // m and v; fp32 parameters are their own masters
    CHECK_FALSE(p.master_weights);
    CHECK(p.in_flight == 1);  // one stage runs each micro-batch forward then backward
    CHECK(p.activations == w.stage().make_activations()->arena_bytes);
    CHECK(p.workspace == 0);
    CHECK(format_memory_plan(p).find("memory plan, pipeline stage 0 of 1 (per rank, TP 1)") == 0);
  }
}

TEST_CASE("memory plan: bf16 compute keeps 2-byte parameters and fp32 masters", "[parallel]") {
  const StageConfig model = tiny(true);
  const MemoryPlan f32 = memory_plan(model, 8, ParallelArgs{}, 0, 1, 1, DType::F32, WorkspaceOptions{});
  const MemoryPlan bf = memory_plan(model, 8, ParallelArgs{}, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  CHECK(bf.parameters == 2 * bf.param_elements);
  CHECK(bf.master_weights);
  CHECK(bf.optimizer == 12 * bf.param_elements);
  CHECK(bf.activations < f32.activations);
}

TEST_CASE("memory plan: bf16-stored Adam moments (--exp-avg-dtype, --exp-avg-sq-dtype) take 2 bytes each",
          "[parallel]") {
  const StageConfig model = tiny(false);
  auto round4 = [](std::size_t b) { return (b + 3) / 4 * 4; };  // AdamW aligns each state array to 4 bytes
  for (const DType compute : {DType::F32, DType::BF16})
    for (int dp : {1, 3}) {
      ParallelArgs o;
      o.use_distributed_optimizer = true;
      o.use_precision_aware_optimizer = true;
      const MemoryPlan f32 = memory_plan(model, 8, o, 0, dp, 1, compute, WorkspaceOptions{});
      const std::size_t master = compute == DType::F32 ? 0 : 4;
      REQUIRE(f32.optimizer % (8 + master) == 0);
      const std::size_t range = f32.optimizer / (8 + master);  // this rank's updated elements
      o.exp_avg_sq_dtype = "bf16";
      const MemoryPlan one = memory_plan(model, 8, o, 0, dp, 1, compute, WorkspaceOptions{});
      CHECK(one.optimizer == 4 * range + round4(2 * range) + master * range);
      CHECK(format_memory_plan(one).find("moments (exp_avg fp32, exp_avg_sq bf16)") != std::string::npos);
      o.exp_avg_dtype = "bf16";
      const MemoryPlan both = memory_plan(model, 8, o, 0, dp, 1, compute, WorkspaceOptions{});
      CHECK(both.optimizer == 2 * round4(2 * range) + master * range);
      CHECK(both.parameters == f32.parameters);
      CHECK(both.gradients == f32.gradients);
      CHECK(both.workspace == f32.workspace);
    }
}

TEST_CASE("memory plan: --bf16-stochastic-rounding keeps no fp32 master weights", "[parallel]") {
  const StageConfig model = tiny(true);
  ParallelArgs o;
  const MemoryPlan master = memory_plan(model, 8, o, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  o.bf16_stochastic_rounding = true;
  const MemoryPlan sr = memory_plan(model, 8, o, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  CHECK_FALSE(sr.master_weights);
  CHECK(sr.optimizer == 8 * sr.param_elements);  // m and v only: 4 bytes per element less
  CHECK(sr.optimizer + 4 * sr.param_elements == master.optimizer);
  CHECK(sr.parameters == 2 * sr.param_elements);
  CHECK(format_memory_plan(sr).find("no master weights (--bf16-stochastic-rounding)") != std::string::npos);
  // Sharded: the saving is per shard element.
  o.use_distributed_optimizer = true;
  const MemoryPlan sharded = memory_plan(model, 8, o, 0, 2, 1, DType::BF16, WorkspaceOptions{});
  o.bf16_stochastic_rounding = false;
  const MemoryPlan sharded_master = memory_plan(model, 8, o, 0, 2, 1, DType::BF16, WorkspaceOptions{});
  CHECK(sharded.optimizer * 3 == sharded_master.optimizer * 2);
}

TEST_CASE("memory plan: --optimizer sgd keeps one state array, muon one for its matrices and two for the rest",
          "[parallel]") {
  const StageConfig model = tiny(true);
  ParallelArgs o;
  const MemoryPlan adam = memory_plan(model, 8, o, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  o.optimizer = "sgd";
  const MemoryPlan sgd = memory_plan(model, 8, o, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  CHECK(sgd.optimizer == 8 * sgd.param_elements);  // momentum buffer + master
  o.optimizer = "muon";
  const MemoryPlan muon = memory_plan(model, 8, o, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  std::size_t matrices = 0, largest = 0;
  const ChunkRange whole = pipeline_chunks(o, model.num_layers, 0).front();
  for (const ParamTensor& t : build_param_layout(chunk_model_config(model, 8, 1, 0, false, whole, 1)).tensors)
    if (uses_muon(t)) matrices += t.numel, largest = std::max(largest, t.numel);
  REQUIRE(matrices > 0);
  CHECK(muon.optimizer == adam.optimizer - 4 * matrices);
  CHECK(muon.workspace == adam.workspace + 4 * largest * 6);  // u, the TP-gathered whole and blocks, NS scratch
}

TEST_CASE("memory plan: Muon's layer-wise distributed optimizer holds the state of the tensors its busiest rank owns",
          "[parallel]") {
  const StageConfig model = tiny(true);
  ParallelArgs o;
  o.optimizer = "muon";
  const MemoryPlan replicated = memory_plan(model, 8, o, 0, 2, 1, DType::BF16, WorkspaceOptions{});
  o.use_distributed_optimizer = true;
  const MemoryPlan lw = memory_plan(model, 8, o, 0, 2, 1, DType::BF16, WorkspaceOptions{});
  const ChunkRange whole = pipeline_chunks(o, model.num_layers, 0).front();
  const ParamLayout layout = build_param_layout(chunk_model_config(model, 8, 1, 0, false, whole, 1));
  const std::vector<int> owner = parallel::layer_wise_owners(layout, 2);
  std::size_t most = 0, all = 0;
  for (int q = 0; q < 2; ++q) {
    std::size_t bytes = 0;  // Muon: momentum + master; AdamW: m, v + master
    for (std::size_t ti = 0; ti < layout.tensors.size(); ++ti)
      if (owner[ti] == q) bytes += layout.tensors[ti].numel * (uses_muon(layout.tensors[ti]) ? 8 : 12);
    most = std::max(most, bytes);
    all += bytes;
  }
  CHECK(all == replicated.optimizer);
  CHECK(lw.optimizer == most);
  CHECK(most < all);
  CHECK(lw.layer_wise_optimizer);
  CHECK(!lw.distributed_optimizer);
  CHECK(format_memory_plan(lw).find("whole tensors over 2 data-parallel ranks (layer-wise)") != std::string::npos);
  CHECK(lw.workspace == replicated.workspace);  // no bucket shards
}

TEST_CASE("memory plan: recomputation choices of an MoE model count the MoE MLPs", "[parallel]") {
  StageConfig model = tiny(true);
  model.moe.num_experts = 4;
  model.moe.layer_pattern = {1, 1, 1, 1};
  ParallelArgs o;
  const std::vector<RecomputeChoice> choices = recompute_choices(model, 8, o, 0, 1, 4, DType::F32, WorkspaceOptions{});
  REQUIRE(choices.size() == 5 + 2 * std::size_t(model.num_layers));  // the MoE choice added after the selective ones
  const RecomputeChoice &core_attn = choices[1], &with_mlp = choices[2], &moe = choices[4];
  CHECK(moe.flags == "--recompute-granularity selective --recompute-modules core_attn mlp moe");
  // Every layer is MoE: mlp recomputes nothing more (Megatron's mlp is the dense MLP), moe replays the MoE MLPs.
  CHECK(with_mlp.extra_forward == core_attn.extra_forward);
  CHECK(moe.extra_forward > core_attn.extra_forward);
  CHECK(moe.extra_forward < 1.0);
  CHECK(moe.plan.activations < core_attn.plan.activations);
}

TEST_CASE("memory plan: expert parallelism shards the routed experts over EDP and counts the exchange buffers",
          "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig model = tiny(true);
  model.moe.num_experts = 4;
  model.moe.topk = 2;
  model.moe.layer_pattern = {1, 1, 1, 1};
  ParallelArgs o;
  o.use_distributed_optimizer = true;
  const int dp = 4;
  for (const char* dispatcher : {"allgather", "alltoall"})
    for (int ep : {1, 2, 4}) {
      o.expert_model_parallel_size = ep;
      o.moe_token_dispatcher_type = dispatcher;
      const MemoryPlan p = memory_plan(model, 8, o, 0, dp, 2, *be);
      const StageConfig cc = chunk_model_config(model, 8, 1, 0, false, pipeline_chunks(o, model.num_layers, 0)[0], ep);
      const ParamLayout L = build_param_layout(cc);
      std::size_t expert = 0;
      for (const ParamTensor& t : L.tensors) expert += t.expert ? t.numel : 0;
      REQUIRE(expert > 0);
      const int edp = dp / ep;
      INFO("EP " << ep << ", " << dispatcher);
      CHECK(p.expert_dp_size == edp);
      // AdamW's m and v: 1/EDP of this rank's experts, 1/DP of the rest, plus under one element of padding
      // per bucket (a bucket never mixes the two, so there are at most as many buckets as tensors).
      const double moments = double(expert) / edp + double(L.total - expert) / dp;
      CHECK(double(p.optimizer) >= 8 * moments);
      CHECK(double(p.optimizer) < 8 * (moments + double(L.tensors.size())));
      CHECK((format_memory_plan(p).find(fmt::format("data-parallel ranks, routed experts over {}", edp)) !=
             std::string::npos) == (ep > 1));
      // The exchange buffers: none without EP; with EP the bound of expert_exchange.h, in the workspace.
      const std::size_t exchange =
          exchange_buffer_bytes(local_sizes(cc), ep, parallel::parse_token_dispatcher_type(dispatcher), 4);
      CHECK(p.expert_exchange == exchange);
      CHECK((exchange > 0) == (ep > 1));
      CHECK((format_memory_plan(p).find("expert exchange buffers") != std::string::npos) == (ep > 1));
      CHECK(p.workspace >= exchange);
    }
}

TEST_CASE("memory plan: expert tensor parallelism halves a TP rank's expert weights, and EP over TP reduces over DP",
          "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig model = tiny(true);
  model.moe.num_experts = 4;
  model.moe.topk = 2;
  model.moe.layer_pattern = {1, 1, 1, 1};
  ParallelArgs o;
  o.tensor_model_parallel_size = 2;
  const ChunkRange whole = pipeline_chunks(o, model.num_layers, 0)[0];
  std::size_t expert = 0;  // this TP rank's expert elements with the experts whole (ETP 1)
  for (const ParamTensor& t : build_param_layout(chunk_model_config(model, 8, 2, 0, false, whole)).tensors)
    expert += t.expert ? t.numel : 0;
  REQUIRE(expert > 0);
  const std::size_t split = stage_parameter_counts(model, 8, o, 0, 2).elements.at(0);  // ETP 2, the default
  o.expert_tensor_parallel_size = 1;
  const std::size_t kept = stage_parameter_counts(model, 8, o, 0, 2).elements.at(0);
  CHECK(kept - split == expert / 2);
  // ETP 1 with EP 2 = TP: half of the experts whole per TP rank, expert-data-parallel group = DP group.
  o.expert_model_parallel_size = 2;
  const MemoryPlan p = memory_plan(model, 8, o, 0, 2, 2, *be);
  CHECK(p.expert_dp_size == 2);
  CHECK(stage_parameter_counts(model, 8, o, 0, 2).elements.at(0) == kept - expert / 2);
  const StageConfig cc = chunk_model_config(model, 8, 2, 0, false, whole, 2);
  CHECK(p.expert_exchange == over_tp_buffer_bytes(local_sizes(cc), 2, 4));
  CHECK(describe_expert_parallelism(model, o, 2, 2, DType::F32).find("over the TP ranks (ETP 1, EP 2 = TP)") !=
        std::string::npos);
  o.expert_tensor_parallel_size.reset();
  o.expert_model_parallel_size = 1;
  StageConfig finalized = model;  // as --dry-run's: the expert ffn width (64) filled in
  finalized.finalize(8);
  CHECK(describe_expert_parallelism(finalized, o, 2, 2, DType::F32)
            .find("expert tensor parallelism: ETP 2, 32 of each") != std::string::npos);
}

TEST_CASE("memory plan: context parallelism halves the activations, counts the K/V ring and names CP", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  StageConfig model = tiny(true);  // seq 16, 4 layers, NH 4, NKV 2, HS 8, micro-batch 2
  ParallelArgs o;
  const MemoryPlan one = memory_plan(model, 8, o, 0, 1, 3, *be);
  o.context_parallel_size = 2;
  const MemoryPlan two = memory_plan(model, 8, o, 0, 2, 3, *be);
  CHECK(two.activations_per_micro_batch < one.activations_per_micro_batch);
  CHECK(one.context_exchange == 0);
  CHECK(format_memory_plan(one).find("context") == std::string::npos);
  // One layer's ring on 8 local rows per sample: K/V blocks of 2 x 8 x 2 x 2 x 8 fp32 values.
  const ContextExchangeBytes e = context_exchange_bytes(2, 2, 8, 4, 2, 8, DType::F32);
  CHECK(e.kv_block == 2 * 8 * 2 * 2 * 8 * 4);
  CHECK(e.forward == e.kv_block);
  CHECK(e.backward == e.kv_block + 2 * e.dkv_block);
  CHECK(two.context_exchange == e.buffers);
  CHECK(two.workspace >= e.buffers);
  CHECK(two.context_bytes_per_step == (e.forward + e.backward) * 4 * 3);  // 4 layers, 3 micro-batches
  CHECK(format_memory_plan(two).find("context-parallel K/V exchange buffers") != std::string::npos);
  CHECK(format_memory_plan(two).find("context parallel 2: ") != std::string::npos);
  // Activations that do not fit: the advice names the next CP size (the sequence splits into 8 chunks).
  REQUIRE_THROWS_WITH(check_memory_plan_fits(two, two.states() + two.workspace + 1, two.total()),
                      Catch::Contains("--context-parallel-size 4"));
  model.seq_length = 12;  // 12 / (2 x 4) is not whole: no CP advice
  model.max_position_embeddings = 16;
  o.context_parallel_size = 2;
  const MemoryPlan odd = memory_plan(model, 8, o, 0, 2, 3, *be);
  REQUIRE_THROWS_WITH(check_memory_plan_fits(odd, odd.states() + odd.workspace + 1, odd.total()),
                      !Catch::Contains("--context-parallel-size"));
  // A sequence CP cannot split is refused by name.
  model.seq_length = 14;
  REQUIRE_THROWS_WITH(memory_plan(model, 8, o, 0, 2, 3, *be),
                      Catch::Contains("--seq-length 14 must be divisible by 2 x --context-parallel-size 2"));
}
