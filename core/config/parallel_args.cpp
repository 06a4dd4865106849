#include "core/config/parallel_args.h"

#include "core/common/error.h"
#include "core/common/log.h"

#include <algorithm>

namespace gptrain {

int expert_tensor_parallel_size(const ParallelArgs& o) {
  return o.expert_tensor_parallel_size.value_or(o.tensor_model_parallel_size);
}

bool experts_over_tp(const ParallelArgs& o) {
  return expert_tensor_parallel_size(o) == 1 && o.tensor_model_parallel_size > 1 && o.expert_model_parallel_size > 1;
}

int expert_data_parallel_size(const ParallelArgs& o, int dp) {
  return experts_over_tp(o) ? dp : dp / std::max(1, o.expert_model_parallel_size);
}

double optimizer_host_fraction(const ParallelArgs& o) {
  return o.optimizer_cpu_offload ? o.optimizer_offload_fraction.value_or(1.0) : 0.0;
}

void apply_megatron_fsdp(ParallelArgs& o) {
  if (!o.use_megatron_fsdp) {  // Megatron reads the strategy only with it
    if (o.data_parallel_sharding_strategy != "optim_grads_params")
      log::info(
          "--data-parallel-sharding-strategy {} applies with --use-megatron-fsdp; without it, ignored (as Megatron)",
          o.data_parallel_sharding_strategy);
    return;
  }
  const std::string& s = o.data_parallel_sharding_strategy;
  check(s == "no_shard" || s == "optim",
        "--use-megatron-fsdp with --data-parallel-sharding-strategy {}{}: gradient and parameter sharding (ZeRO-2 / "
        "ZeRO-3) are not implemented; give --data-parallel-sharding-strategy optim (ZeRO-1: optimizer state and fp32 "
        "masters sharded, as --use-distributed-optimizer) or no_shard",
        s, s == "optim_grads_params" ? " (Megatron's default)" : "");
  check(o.optimizer == "adam" || o.optimizer == "sgd",
        "--use-megatron-fsdp supports --optimizer adam or sgd (as Megatron), not {}", o.optimizer);
  if (s == "optim") o.use_distributed_optimizer = true;
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
  check(!o.bf16_stochastic_rounding || o.optimizer == "adam",
        "--bf16-stochastic-rounding: only with --optimizer adam (got --optimizer {})", o.optimizer);
  check(!o.bf16_stochastic_rounding || !o.optimizer_cpu_offload,
        "--bf16-stochastic-rounding keeps no fp32 master weights to offload: not with --optimizer-cpu-offload");
  check(!o.use_precision_aware_optimizer || o.use_distributed_optimizer,
        "--use-precision-aware-optimizer is only supported with --use-distributed-optimizer (as Megatron)");
  check(o.num_distributed_optimizer_instances >= 1, "--num-distributed-optimizer-instances must be >= 1, got {}",
        o.num_distributed_optimizer_instances);
  check(!o.use_megatron_fsdp || o.data_parallel_sharding_strategy != "no_shard" ||
            o.num_distributed_optimizer_instances == 1,
        "--num-distributed-optimizer-instances {} with --use-megatron-fsdp needs --data-parallel-sharding-strategy "
        "optim (no_shard has nothing to shard inside an instance)",
        o.num_distributed_optimizer_instances);
  check(o.num_distributed_optimizer_instances == 1 || o.use_distributed_optimizer,
        "--num-distributed-optimizer-instances {} needs --use-distributed-optimizer (as Megatron: the instances are "
        "replicas of the distributed optimizer)",
        o.num_distributed_optimizer_instances);
  check(o.num_distributed_optimizer_instances == 1 || !o.grad_reduce_in_bf16,
        "--num-distributed-optimizer-instances {} with --grad-reduce-in-bf16 is not implemented (the inter-instance "
        "all-reduce is fp32 only)",
        o.num_distributed_optimizer_instances);
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
  const int tp = o.tensor_model_parallel_size, etp = expert_tensor_parallel_size(o);
  check(etp >= 1, "--expert-tensor-parallel-size must be >= 1, got {}", etp);
  // Megatron builds its expert grid (ETP x EP x EDP x PP) for any ETP dividing the world; gptrain implements
  // the two grids whose expert groups stay inside its dense ones.
  check(etp == 1 || etp == tp,
        "--expert-tensor-parallel-size {} with --tensor-model-parallel-size {}: gptrain splits the experts over the "
        "tensor-parallel group (ETP = TP, Megatron's default) or not at all (ETP 1); Megatron's grids with another "
        "ETP (expert groups that cross the TP and data-parallel groups) are not implemented",
        etp, tp);
  // ETP 1 with TP > 1: Megatron's expert-model-parallel groups then run across the TP ranks first; gptrain
  // implements EP = TP (each TP group one EP group) and EP 1.
  const int ep = o.expert_model_parallel_size;
  check(etp == tp || ep == 1 || ep == tp,
        "--expert-tensor-parallel-size 1 with --tensor-model-parallel-size {} and --expert-model-parallel-size {}: "
        "Megatron's expert-model-parallel groups then span the TP ranks and data-parallel ranks, which gptrain does "
        "not implement; use --expert-model-parallel-size {} (the experts split over the TP ranks) or 1, or "
        "--expert-tensor-parallel-size {}",
        tp, ep, tp, tp);
  check(o.moe_token_dispatcher_type == "allgather" || o.moe_token_dispatcher_type == "alltoall",
        "--moe-token-dispatcher-type {}: expected allgather or alltoall (flex needs DeepEP, not available)",
        o.moe_token_dispatcher_type);
  check(o.context_parallel_size >= 1, "--context-parallel-size must be >= 1, got {}", o.context_parallel_size);
  check(o.context_parallel_size == 1 || o.expert_model_parallel_size == 1,
        "--context-parallel-size {} with --expert-model-parallel-size {} is not supported yet (MoE layers with CP)",
        o.context_parallel_size, o.expert_model_parallel_size);
  check(o.context_parallel_size == 1 || o.num_distributed_optimizer_instances == 1,
        "--num-distributed-optimizer-instances {} with --context-parallel-size {} is not implemented (hybrid "
        "sharding splits the data-parallel group; with CP the distributed optimizer shards over DP x CP)",
        o.num_distributed_optimizer_instances, o.context_parallel_size);
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
