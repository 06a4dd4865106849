#include "core/config/parallel_args.h"

#include "core/common/error.h"

namespace gptrain {

double optimizer_host_fraction(const ParallelArgs& o) {
  return o.optimizer_cpu_offload ? o.optimizer_offload_fraction.value_or(1.0) : 0.0;
}

void validate_parallel_args(const ParallelArgs& o) {
  for (const auto& [flag, value] :
       {std::pair{"--exp-avg-dtype", o.exp_avg_dtype}, {"--exp-avg-sq-dtype", o.exp_avg_sq_dtype}}) {
    check(value == "fp32" || value == "bf16",
          "{} {}: only fp32 or bf16 (Megatron's fp16 and fp8 moments keep a per-tensor scale, not implemented)", flag,
          value);
    check(value == "fp32" || o.use_precision_aware_optimizer,
          "{} {}: a moment dtype other than fp32 needs --use-precision-aware-optimizer", flag, value);
    check(value == "fp32" || o.optimizer == "adam",
          "{} {}: Adam's moments; --optimizer {} keeps its momentum in fp32 (Megatron ignores the flag there)", flag,
          value, o.optimizer);
  }
  check(!o.use_precision_aware_optimizer || o.use_distributed_optimizer,
        "--use-precision-aware-optimizer is only supported with --use-distributed-optimizer (as Megatron)");
  check(!o.optimizer_offload_fraction || o.optimizer_cpu_offload,
        "--optimizer-offload-fraction applies with --optimizer-cpu-offload (without it the optimizer state stays on "
        "the device)");
  check(!o.optimizer_offload_fraction || (*o.optimizer_offload_fraction >= 0.0 && *o.optimizer_offload_fraction <= 1.0),
        "--optimizer-offload-fraction must be in [0, 1] (got {})", o.optimizer_offload_fraction.value_or(0.0));
  check(o.tensor_model_parallel_size >= 1, "--tensor-model-parallel-size must be >= 1, got {}",
        o.tensor_model_parallel_size);
  check(o.pipeline_model_parallel_size >= 1, "--pipeline-model-parallel-size must be >= 1, got {}",
        o.pipeline_model_parallel_size);
  check(o.expert_model_parallel_size >= 1, "--expert-model-parallel-size must be >= 1, got {}",
        o.expert_model_parallel_size);
  check(o.moe_token_dispatcher_type == "allgather" || o.moe_token_dispatcher_type == "alltoall",
        "--moe-token-dispatcher-type {}: expected allgather or alltoall (flex needs DeepEP, not available)",
        o.moe_token_dispatcher_type);
  check(o.context_parallel_size >= 1, "--context-parallel-size must be >= 1, got {}", o.context_parallel_size);
  check(o.context_parallel_size == 1 || o.expert_model_parallel_size == 1,
        "--context-parallel-size {} with --expert-model-parallel-size {} is not supported yet (MoE layers with CP)",
        o.context_parallel_size, o.expert_model_parallel_size);
  check(!(o.num_layers_per_virtual_pipeline_stage && o.num_virtual_stages_per_pipeline_rank),
        "give only one of --num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank");
  const bool interleaved = o.num_layers_per_virtual_pipeline_stage || o.num_virtual_stages_per_pipeline_rank;
  if (interleaved)
    check(o.pipeline_model_parallel_size > 1,
          "an interleaved (virtual) pipeline needs --pipeline-model-parallel-size > 1");
  if (o.num_layers_per_virtual_pipeline_stage)
    check(*o.num_layers_per_virtual_pipeline_stage >= 1, "--num-layers-per-virtual-pipeline-stage must be >= 1");
  if (o.num_virtual_stages_per_pipeline_rank)
    check(*o.num_virtual_stages_per_pipeline_rank >= 1, "--num-virtual-stages-per-pipeline-rank must be >= 1");
  const bool uneven = o.decoder_first_pipeline_num_layers || o.decoder_last_pipeline_num_layers;
  if (uneven) {
    check(o.pipeline_model_parallel_size > 1,
          "--decoder-first/last-pipeline-num-layers need --pipeline-model-parallel-size > 1");
    check(!interleaved, "--decoder-first/last-pipeline-num-layers with an interleaved pipeline is not supported yet");
  }
  check(!o.ddp_bucket_size || *o.ddp_bucket_size >= 1, "--ddp-bucket-size must be >= 1 element, got {}",
        o.ddp_bucket_size.value_or(0));
  check(!o.overlap_param_gather || (o.use_distributed_optimizer && o.overlap_grad_reduce),
        "--overlap-param-gather needs --use-distributed-optimizer and --overlap-grad-reduce (as Megatron)");
  check(o.distributed_timeout_minutes > 0, "--distributed-timeout-minutes must be > 0, got {}",
        o.distributed_timeout_minutes);
}

}  // namespace gptrain
