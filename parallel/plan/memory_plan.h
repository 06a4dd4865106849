// The memory plan printed before step 1 (and by --dry-run): per pipeline stage, the bytes one rank holds
// of each kind of training state; a single process is the world of one. Computed from the configs alone (ParamLayout,
// LocalSizes, StageActivations::arena_bytes_for, the schedule's in-flight micro-batches), so any rank can print every
// stage's plan and check its own against the device before allocating anything. Amounts follow what DistributedGpt and
// DataParallelOptimizer allocate:
//   parameters   this rank's chunks, compute dtype (the last stage's tied word-embedding copy included)
//   gradients    fp32, same elements
//   optimizer    Adam moments m, v (fp32; bf16 with --exp-avg-dtype / --exp-avg-sq-dtype) (+ fp32 master
//                weights when compute is bf16/fp16, none with --bf16-stochastic-rounding) over the rank's range:
//                all of its elements, or with --use-distributed-optimizer one DP shard (ceil(elements / DP);
//                DP / N ranks with --num-distributed-optimizer-instances N)
//   activations  one arena per micro-batch in flight per chunk (the schedule's peak), plus with
//                recomputation each chunk's replay workspace (once: backward refills it for every micro-batch)
//                and with activation offloading each chunk's staging slots (the offloaded layers' share of an
//                arena moves to a host arena per micro-batch in flight: host bytes, not in the total)
//   optimizer    with --optimizer-cpu-offload, only the part left on the device; the host part (moments,
//                master and a gradient copy, 16 bytes per element with fp32 moments) is host bytes
//   workspace    with PP > 1 the two pipeline receive buffers (N_seq, C), with the distributed optimizer its
//                padded gradient copy, reduced gradient shard and gathered-parameter buffer, with
//                --grad-reduce-in-bf16 and DP > 1 the bf16 copies the buckets are reduced through, and the
//                backend's own scratch (backend_workspace.h: the largest over the chunks, the
//                same estimate as the single-process plan's; a lower bound when cuDNN's plan workspace
//                is unknown)
#pragma once

#include "core/model/model_config.h"
#include "core/config/parallel_args.h"
#include "parallel/plan/backend_workspace.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {
class Backend;
}

namespace gptrain::parallel {

struct MemoryPlan {
  int pp_rank = 0, pp_size = 1, tp_size = 1, dp_size = 1;
  int expert_dp_size = 1;          // EDP: the ranks a routed expert's optimizer state is sharded over (DP without EP)
  std::size_t param_elements = 0;  // this rank's parameter elements (all its chunks)
  std::size_t parameters = 0, gradients = 0, optimizer = 0, activations = 0, workspace = 0;  // bytes
  bool master_weights = false;
  bool stochastic_rounding = false;  // --bf16-stochastic-rounding: no master, named in the description
  std::size_t exp_avg_bytes = 4, exp_avg_sq_bytes = 4;  // per moment element (--exp-avg-dtype, --exp-avg-sq-dtype)
  bool distributed_optimizer = false;
  int dist_opt_instances = 1;         // --num-distributed-optimizer-instances: shards over dp_size / this
  bool layer_wise_optimizer = false;  // --optimizer muon --use-distributed-optimizer: whole tensors per DP rank
  bool sequence_parallel = false;
  int in_flight = 0;                            // activation arenas alive at the peak (summed over chunks)
  std::size_t activations_per_micro_batch = 0;  // one arena of each chunk (bytes)
  std::size_t replay_workspace = 0;             // recomputation's replay workspaces, in `activations`
  std::string recompute = "none";               // describe_recompute of the plan's configuration
  // Offloading: host bytes, and the device bytes each saves against the same plan without it.
  int offload_layers = 0;           // --cpu-offloading-num-layers
  std::size_t offload_staging = 0;  // the staging slots, in `activations`
  std::size_t activations_host = 0, activations_saved = 0;
  double optimizer_host_fraction = 0.0;  // --optimizer-offload-fraction with --optimizer-cpu-offload
  std::size_t optimizer_host = 0, optimizer_saved = 0;
  std::size_t host_bytes_per_step = 0;  // copied to and from host memory per step by offloading
  BackendWorkspace backend;             // the backend's scratch, included in `workspace`
  std::size_t expert_exchange = 0;      // the token dispatcher's buffers (EP > 1), included in `workspace`
  // Data-parallel bytes one rank sends per step (ring collectives: (n-1)/n of the buffer per reduce-scatter or
  // all-gather over n ranks, twice that per all-reduce): the gradient reduction (fp32, bf16 with
  // --grad-reduce-in-bf16), with hybrid sharding the inter-instance all-reduce of the shards, and the
  // distributed optimizer's parameter all-gather (compute dtype).
  std::size_t dp_grad_bytes = 0, dp_inter_bytes = 0, dp_gather_bytes = 0;
  // Context parallelism (CP > 1): the K/V ring's buffers (two K/V blocks, two fp32 dK/dV blocks, the fp32
  // output and dQ accumulators; context_parallel_hooks.h), included in `workspace`, and the bytes one
  // rank sends in the ring per training step (forward and backward of every layer and micro-batch; a
  // recomputed forward sends its blocks again).
  int cp_size = 1;
  int seq_length = 0;
  std::size_t context_exchange = 0;
  std::size_t context_bytes_per_step = 0;
  std::size_t states() const { return parameters + gradients + optimizer; }
  std::size_t total() const { return states() + activations + workspace; }
};

// The plan of pipeline rank pp_rank (TP rank 0, DP rank 0: other TP/DP ranks of the stage hold the
// same, up to the last DP shard's rounding). `model` is the global, not finalized, architecture;
// num_microbatches per step and DP rank; be gives the compute dtype and the workspace options (or
// `compute` and `ws` directly: pretrain_gpt --dry-run plans without a backend).
MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, Backend& be);
MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, DType compute, const WorkspaceOptions& ws);

// What a stage's plan takes from its chunks' parameter layouts: the elements, and with the distributed optimizer
// this rank's shard and the padded blocks' elements. Recomputation and activation offloading change none of
// it, so their choices (recompute_plan.h, offload_plan.h) build the layouts once (a layout is linear in the
// layers, and the choices are many) and pass the counts to the overload below.
struct StageParameterCounts {
  std::vector<std::size_t> elements, shard, padded;  // per chunk of the stage
};
StageParameterCounts stage_parameter_counts(const StageConfig& model, int make_vocab_size_divisible_by,
                                            const ParallelArgs& opts, int pp_rank, int dp_size);
MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, DType compute, const WorkspaceOptions& ws,
                       const StageParameterCounts& counts);

// "memory plan, pipeline stage 0 of 2 (per rank, TP 1): ... parameters 1.20 MiB, ..." (one line).
std::string format_memory_plan(const MemoryPlan& p);

// "12.34 MiB" / "1.23 GiB": the unit every memory-plan line uses. The double form for estimates that may
// exceed 64 bits (a formula's bytes), which a conversion to size_t would not hold.
std::string format_bytes(std::size_t bytes);
std::string format_bytes(double bytes);

// Fails, naming the flags to change, when the plan exceeds `free_bytes` (the device memory free
// before the model is built): the states call for more model parallelism or the distributed
// optimizer, the activations for recomputation (`recompute_fit`: the cheapest recomputation flags that
// fit, recompute_plan.h; empty when none does), offloading (`offload_fit`: the offloading flags that fit
// and copy the least per step, offload_plan.h) or a smaller --micro-batch-size.
// `host_limit`, for the CPU backend: what bounds `free_bytes` (e.g. "left under the cgroup's memory limit
// (...)"), said instead of the device's free and total memory.
void check_memory_plan_fits(const MemoryPlan& p, std::size_t free_bytes, std::size_t device_bytes,
                            const std::string& recompute_fit = "", const std::string& offload_fit = "",
                            const std::string& host_limit = "");

// Address space the CPU backend reserves beyond its memory plan and rarely touches: OpenBLAS's GEMM buffer
// (128 MiB) and the heaps of threads that allocate (measured: a 2-layer run needs ~150 MiB more than its
// address space at the plan check).
inline constexpr std::size_t kCpuBackendAddressReserve = std::size_t(192) << 20;

// Under an address-space limit (ulimit -v; `left`: what it leaves this process) the plan and that reserve
// must fit: past it OpenBLAS waits forever for a buffer. Fails naming ulimit -v and the bytes.
void check_cpu_address_space(const MemoryPlan& p, std::optional<std::size_t> left);

}  // namespace gptrain::parallel
