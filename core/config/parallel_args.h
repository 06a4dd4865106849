// The parallel layout flags (world = TP x CP x PP x DP, Megatron's names). parallel/ reads them: the process
// grid, the communicators, the pipeline split and schedules, data-parallel buckets and the distributed
// optimizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

struct ParallelArgs {
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int context_parallel_size = 1;       // CP: ranks that split each sequence
  int expert_model_parallel_size = 1;  // EP: experts split over EP ranks inside DP
  // ETP: each routed expert's fc1 rows / fc2 columns split over the TP group; unset: TP (Megatron's default).
  // gptrain takes TP or 1 (experts whole: on every TP rank with EP 1, split over the TP ranks with EP = TP).
  std::optional<int> expert_tensor_parallel_size;
  std::string moe_token_dispatcher_type = "allgather";  // how tokens reach their expert's rank: allgather | alltoall
  bool sequence_parallel = false;
  bool use_distributed_optimizer = false;
  // --num-distributed-optimizer-instances N: hybrid sharding, the distributed optimizer shards over DP / N
  // ranks and the N instances replicate it (ProcessGrid::intra_dp_group / inter_dp_group)
  int num_distributed_optimizer_instances = 1;
  // Megatron FSDP (--use-megatron-fsdp) with --data-parallel-sharding-strategy no_shard (plain DP) or optim
  // (ZeRO-1, the distributed optimizer); optim_grads (ZeRO-2) and optim_grads_params (ZeRO-3, Megatron's
  // default) are refused.
  bool use_megatron_fsdp = false;
  std::string data_parallel_sharding_strategy = "optim_grads_params";
  // --optimizer: adam | sgd, the update rule of the ranges this rank updates (its state per element is in the
  // memory plan, sharded by the distributed optimizer like Adam's)
  std::string optimizer = "adam";
  bool overlap_grad_reduce = false;        // DP gradient buckets reduced during backward
  bool overlap_param_gather = false;       // distributed optimizer: parameter gathers finish during the next forward
  std::optional<int64_t> ddp_bucket_size;  // elements per DP gradient bucket; default max(40M, 1M x DP)
  bool grad_reduce_in_bf16 = false;        // DP gradient buckets communicated and summed in bf16
  // --optimizer-cpu-offload: --optimizer-offload-fraction of this rank's optimizer state (Adam moments and
  // fp32 master weights) lives in host memory and is updated there by the CPU AdamW (core/optim/adamw.h)
  bool optimizer_cpu_offload = false;
  std::optional<double> optimizer_offload_fraction;  // default 1.0 (all of it), as Megatron
  // Megatron's precision-aware optimizer: --exp-avg-dtype / --exp-avg-sq-dtype store the Adam moments in
  // bf16 (fp32 maths, rounded to nearest even on store); anything but fp32 needs
  // --use-precision-aware-optimizer, which needs --use-distributed-optimizer (Megatron's rules).
  bool use_precision_aware_optimizer = false;
  std::string exp_avg_dtype = "fp32", exp_avg_sq_dtype = "fp32";
  // --bf16-stochastic-rounding (gptrain): AdamW without fp32 master weights, the bf16 parameters updated
  // with stochastic rounding (kernels/adamw/adamw_math.h).
  bool bf16_stochastic_rounding = false;
  std::optional<int> num_layers_per_virtual_pipeline_stage;  // interleaved pipeline, either form
  std::optional<int> num_virtual_stages_per_pipeline_rank;
  std::optional<int> decoder_first_pipeline_num_layers, decoder_last_pipeline_num_layers;  // uneven split
  std::string distributed_backend = "auto";   // auto (NCCL on CUDA, MPI on CPU) | nccl | mpi
  double distributed_timeout_minutes = 10.0;  // a collective waiting longer ends the job
};

// Flag-level checks that need no model (sizes >= 1, exclusive flags, backend names); throws Error naming
// the flag. validate_train_args calls it; apps that bind only the parallel flags call it themselves.
void validate_parallel_args(const ParallelArgs& o);
// --use-megatron-fsdp: checks its strategy flags (Megatron's rules, and what gptrain implements) and turns on
// the distributed optimizer for --data-parallel-sharding-strategy optim; before validate_parallel_args.
void apply_megatron_fsdp(ParallelArgs& o);
// --expert-tensor-parallel-size, its default (TP) filled in.
int expert_tensor_parallel_size(const ParallelArgs& o);
// ETP 1 with TP > 1 and EP = TP > 1: each TP group is an expert-model-parallel group (whole experts split over
// the TP ranks) and the expert-data-parallel group is the DP group.
bool experts_over_tp(const ParallelArgs& o);
// The expert-data-parallel size for a data-parallel size dp: dp / EP, or dp when the experts are over TP.
int expert_data_parallel_size(const ParallelArgs& o, int dp);
// The fraction of the optimizer state on the host: --optimizer-offload-fraction with
// --optimizer-cpu-offload, else 0.
double optimizer_host_fraction(const ParallelArgs& o);

// How the process computes: --device, --attention-backend, --deterministic-mode (the backend's kernels and
// the communicators' reductions).
struct BackendArgs {
  std::string device = "auto";  // auto | cpu | cuda
  std::string attention_backend = "auto";
  bool deterministic_mode = false;
};

}  // namespace gptrain
