// Activation offloading (activation_offload.h): with the first N layers' activations moved to the host
// after their forward and back before their backward, the losses and gradients are bit for bit those of
// the run that keeps them, for every N, alone and with every recomputation choice, fused and unfused
// ops, on the whole model and on a pipeline split, with three micro-batches in flight (so later forwards
// reuse the staging slots before the first backward); the device copies really are dropped (garbage
// written over them after forward changes nothing, garbage in the host arena changes the gradients); and
// the arena shrinks by the offloaded bytes.
#include "core/model/activation_offload.h"
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <limits>
#include <string>

using namespace gptrain;
using namespace gptrain::test;

namespace {

constexpr int kLayers = 6;
constexpr int kMicroBatches = 3;

RecomputeConfig selective_all() {
  RecomputeConfig r;
  r.granularity = RecomputeGranularity::Selective;
  r.core_attn = r.mlp = r.layernorm = true;
  return r;
}

using Result = InFlightResult;

enum class Tamper { None, DeviceCopies, HostArena };

// kMicroBatches forwards, then their backwards in reverse order, through the stages of a split after
// layer `split` (0: one stage). tamper: what to overwrite with NaN between the forwards and the backwards.
Result run(StageConfig c, int offload, const RecomputeConfig& r, int split = 0, Tamper tamper = Tamper::None) {
  c.recompute = r;
  c.cpu_offload_layers = offload;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto overwrite = [&](const std::vector<StageConfig>& cfgs, InFlightActs& acts) {
    for (std::size_t i = 0; i < cfgs.size(); ++i)
      for (auto& per_stage : acts) {
        StageActivations& a = *per_stage[i];
        if (tamper == Tamper::HostArena) {
          if (a.offload_host) std::fill_n(static_cast<float*>(a.offload_host.get()), a.offload_unit_bytes / 4, nan);
          continue;
        }
        const LocalSizes s = local_sizes(cfgs[i]);
        for (int li = 0; cfgs[i].layer_first + li < kLayers - 1; ++li)  // the first 5 layers' inputs on the device
          std::fill_n(static_cast<float*>(a.res[li]), std::size_t(s.N_seq) * s.C, nan);
      }
  };
  if (tamper == Tamper::None) return run_in_flight(c, kMicroBatches, split);
  return run_in_flight(c, kMicroBatches, split, overwrite);
}

std::vector<RecomputeConfig> recompute_choices() {
  return {RecomputeConfig{},
          selective_all(),
          full_recompute(RecomputeMethod::Uniform, 1),
          full_recompute(RecomputeMethod::Uniform, 2),
          full_recompute(RecomputeMethod::Uniform, 3),
          full_recompute(RecomputeMethod::Block, 2)};
}

}  // namespace

TEST_CASE("offloading: losses and gradients bit for bit those without, every N and recomputation", "[model][offload]") {
  for (const bool fused : {true, false}) {
    for (const std::string family : {"gpt2", "llama", "qwen3"}) {
      StageConfig c = tiny_dropout_config(kLayers);
      c.fused_ops = fused;
      if (family == "llama") use_llama_switches(c), c.num_query_groups = 2, c.ffn_hidden_size = 48;
      if (family == "qwen3")  // the per-head Q/K norm's saved input and statistics go to the host with qkv
        use_llama_switches(c), c.num_query_groups = 2, c.ffn_hidden_size = 48, c.qk_layernorm = true;
      for (const RecomputeConfig& r : recompute_choices()) {
        for (const int split : {0, 3}) {
          const Result kept = run(c, 0, r, split);
          for (const int n : {1, 2, 4, 5}) {
            INFO(family << ", fused " << fused << ", recompute " << describe_recompute(r) << ", split " << split
                        << ", offload " << n);
            const Result got = run(c, n, r, split);
            CHECK(bitwise_equal(got.losses, kept.losses));
            CHECK(bitwise_equal(got.grads, kept.grads));
          }
        }
      }
    }
  }
}

TEST_CASE("offloading: backward reads the host copies, not the device ones (the test can fail)", "[model][offload]") {
  const StageConfig c = tiny_dropout_config(kLayers);
  const Result kept = run(c, 0, RecomputeConfig{});
  CHECK(bitwise_equal(run(c, 5, RecomputeConfig{}, 0, Tamper::DeviceCopies).grads, kept.grads));
  CHECK_FALSE(bitwise_equal(run(c, 5, RecomputeConfig{}, 0, Tamper::HostArena).grads, kept.grads));
  // Without offloading the same device garbage is read back.
  CHECK_FALSE(bitwise_equal(run(c, 0, RecomputeConfig{}, 0, Tamper::DeviceCopies).grads, kept.grads));
}

TEST_CASE("offloading: the arena drops the offloaded layers, the staging slots hold at most three",
          "[model][offload]") {
  StageConfig c = tiny_dropout_config(8);
  c.finalize(8);
  const LocalSizes s = local_sizes(c);
  auto with = [&](int n, const RecomputeConfig& r = {}) {
    StageConfig m = c;
    m.cpu_offload_layers = n;
    m.recompute = r;
    return m;
  };
  const std::size_t none = StageActivations::arena_bytes_for(DType::F32, c, s);
  const std::size_t unit = StageActivations::offload_unit_bytes_for(DType::F32, with(1), s);
  REQUIRE(unit > 0);
  CHECK(StageActivations::offload_staging_bytes_for(DType::F32, c, s) == 0);
  for (int n : {1, 2, 3, 7}) {
    INFO("offload " << n);
    CHECK(StageActivations::arena_bytes_for(DType::F32, with(n), s) == none - std::size_t(n) * unit);
    CHECK(StageActivations::offload_staging_bytes_for(DType::F32, with(n), s) == std::size_t(std::min(n, 3)) * unit);
    CHECK(StageActivations::offload_host_bytes_for(DType::F32, with(n), s) == std::size_t(n) * unit);
  }
  // Full recomputation in groups of 2: of the first 4 layers only the groups' first layers keep (their input).
  const RecomputeConfig g2 = full_recompute(RecomputeMethod::Uniform, 2);
  CHECK(offload_unit_count(with(4, g2)) == 2);
  CHECK(StageActivations::arena_bytes_for(DType::F32, with(4, g2), s) ==
        StageActivations::arena_bytes_for(DType::F32, with(0, g2), s) -
            2 * StageActivations::offload_unit_bytes_for(DType::F32, with(4, g2), s));
  // A live stage allocates exactly the planned arena.
  auto be = make_backend("cpu", DType::F32);
  StageConfig m = with(5);
  GptStage st(m, *be);
  CHECK(st.make_activations()->arena_bytes == StageActivations::arena_bytes_for(DType::F32, m, s));
}
