#include "core/config/recompute_args.h"

#include "core/common/error.h"

#include <fmt/format.h>

namespace gptrain {

namespace {

// Megatron's module names that need a feature gptrain does not have, with that feature.
const char* missing_feature(const std::string& module) {
  if (module == "mla_up_proj") return "multi-latent attention";
  if (module == "mhc") return "hyper-connections";
  if (module == "gdn" || module == "gdn_norm_out") return "gated delta net attention";
  return nullptr;
}

}  // namespace

RecomputeConfig recompute_config_from_args(const RecomputeArgs& a, int num_layers) {
  std::optional<std::string> granularity = a.recompute_granularity, method = a.recompute_method;
  std::optional<int> n = a.recompute_num_layers;
  // The older spellings: a full recompute with --activations-checkpoint-method (uniform for
  // --checkpoint-activations) of --activations-checkpoint-num-layers layers (default 1).
  const bool legacy =
      a.checkpoint_activations || a.activations_checkpoint_method || a.activations_checkpoint_num_layers;
  if (legacy) {
    check(!granularity && !method && !n && !a.recompute_activations,
          "--checkpoint-activations / --activations-checkpoint-method / --activations-checkpoint-num-layers are the "
          "older spellings of --recompute-granularity full --recompute-method M --recompute-num-layers N; give one "
          "spelling, not both");
    check(a.checkpoint_activations || a.activations_checkpoint_method,
          "--activations-checkpoint-num-layers needs --activations-checkpoint-method (or --checkpoint-activations)");
    granularity = "full";
    method = a.activations_checkpoint_method.value_or("uniform");
    n = a.activations_checkpoint_num_layers.value_or(1);
  }
  if (a.recompute_activations) granularity = "selective";  // Megatron: the alias wins

  RecomputeConfig r;
  // Its rules (full only, TP > 1, no sequence parallelism) are the stage's: StageConfig::check_stage.
  r.distribute_saved_activations = a.distribute_saved_activations;
  if (!granularity) {
    check(!method && !n,
          "--recompute-method / --recompute-num-layers need --recompute-granularity full (without a granularity "
          "nothing is recomputed)");
    check(a.recompute_modules.empty(), "--recompute-modules needs --recompute-granularity selective");
    return r;
  }
  check(*granularity == "full" || *granularity == "selective", "--recompute-granularity {}: expected full or selective",
        *granularity);
  if (*granularity == "full") {
    r.granularity = RecomputeGranularity::Full;
    check(method.has_value(), "--recompute-granularity full needs --recompute-method uniform or block");
    check(*method == "uniform" || *method == "block", "--recompute-method {}: expected uniform or block", *method);
    r.method = *method == "uniform" ? RecomputeMethod::Uniform : RecomputeMethod::Block;
    check(n.has_value(),
          "--recompute-granularity full needs --recompute-num-layers N (uniform: layers per recomputed group; block: "
          "recomputed layers per pipeline stage), between 1 and the layers of a stage ({} layers in all)",
          num_layers);
    check(*n >= 1, "--recompute-num-layers must be >= 1 (got {})", *n);
    r.num_layers = *n;
    check(a.recompute_modules.empty(),
          "--recompute-modules applies to --recompute-granularity selective (full recomputes whole layers)");
    return r;
  }
  r.granularity = RecomputeGranularity::Selective;
  check(!method, "--recompute-method is not supported with --recompute-granularity selective (as Megatron)");
  check(!n, "--recompute-num-layers must be unset with --recompute-granularity selective (as Megatron)");
  const std::vector<std::string> modules =
      a.recompute_modules.empty() ? std::vector<std::string>{"core_attn"} : a.recompute_modules;
  for (const std::string& m : modules) {
    if (m == "core_attn") {
      r.core_attn = true;
    } else if (m == "mlp") {
      r.mlp = true;
    } else if (m == "layernorm") {
      r.layernorm = true;
    } else if (m == "moe") {
      r.moe = true;
    } else if (m == "moe_act") {
      r.moe_act = true;
    } else if (m == "shared_experts") {
      fail(
          "--recompute-modules shared_experts: recomputing the shared expert alone is not implemented; moe "
          "recomputes the whole MoE MLP, the shared expert included");
    } else if (const char* feature = missing_feature(m)) {
      fail("--recompute-modules {}: a module of {}, which gptrain does not implement", m, feature);
    } else {
      fail("--recompute-modules {}: not a module; expected core_attn, mlp, layernorm, moe or moe_act", m);
    }
  }
  return r;
}

}  // namespace gptrain
