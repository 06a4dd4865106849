#include "core/config/fp8_args.h"

#include "core/common/error.h"

namespace gptrain {

Fp8Config fp8_config_from_args(const TrainArgs& a) {
  const MixedPrecisionArgs& p = a.precision;
  Fp8Config c;
  if (!p.fp8_format) return c;  // the recipe flags alone do nothing, as in Megatron
  const std::string& f = *p.fp8_format;
  check(f == "e4m3" || f == "hybrid", "--fp8-format {}: expected e4m3 or hybrid", f);
  const std::string& r = p.fp8_recipe;
  check(r != "mxfp8",
        "--fp8-recipe mxfp8: MXFP8 block scaling needs Blackwell GPUs and is not implemented; use "
        "delayed or tensorwise");
  check(r != "blockwise",
        "--fp8-recipe blockwise: FP8 block scaling (1x128 / 128x128 tiles) is not implemented; use "
        "delayed or tensorwise");
  check(r != "custom", "--fp8-recipe custom: a Python quantizer factory is not implemented; use delayed or tensorwise");
  c.enabled = true;
  c.hybrid = f == "hybrid";
  c.recipe = r == "delayed" ? Fp8Recipe::Delayed : Fp8Recipe::Tensorwise;
  c.margin = p.fp8_margin;
  check(p.fp8_amax_history_len >= 1, "--fp8-amax-history-len must be >= 1 (got {})", p.fp8_amax_history_len);
  c.amax_history_len = p.fp8_amax_history_len;
  c.amax_max = p.fp8_amax_compute_algo == "max";
  c.wgrad = !p.no_fp8_wgrad;
  const ModelConfig& m = a.whole_model;
  check(!a.moe.num_experts.has_value(),
        "--fp8-format with --num-experts: the expert GEMMs in FP8 are not implemented (train MoE models without FP8)");
  // Megatron's own refusal: delayed scaling reduces amaxes per FP8 context, which per-layer contexts break.
  check(!(p.first_last_layers_bf16 && c.recipe == Fp8Recipe::Delayed),
        "--first-last-layers-bf16 with --fp8-recipe delayed: delayed scaling does not support first / last layers in "
        "BF16 (as Megatron); use --fp8-recipe tensorwise");
  if (p.first_last_layers_bf16) {
    const int most = m.num_layers / a.parallel.pipeline_model_parallel_size;
    check(p.num_layers_at_start_in_bf16 >= 0 && p.num_layers_at_start_in_bf16 <= most,
          "--num-layers-at-start-in-bf16 {} must be between 0 and the layers per pipeline stage ({})",
          p.num_layers_at_start_in_bf16, most);
    check(p.num_layers_at_end_in_bf16 >= 0 && p.num_layers_at_end_in_bf16 <= most,
          "--num-layers-at-end-in-bf16 {} must be between 0 and the layers per pipeline stage ({})",
          p.num_layers_at_end_in_bf16, most);
    c.bf16_layers_start = p.num_layers_at_start_in_bf16;
    c.bf16_layers_end = p.num_layers_at_end_in_bf16;
  }
  // FP8 GEMMs take 16-bit operands on the GPU; the cpu backend, the reference twin, computes in fp32 only.
  check(a.backend.device != "cuda" || p.bf16 || p.fp16,
        "--fp8-format with fp32 parameters on the cuda backend: add --bf16 (or --fp16), as Megatron's FP8 recipes "
        "expect");
  return c;
}

}  // namespace gptrain
