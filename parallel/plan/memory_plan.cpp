#include "parallel/plan/memory_plan.h"

#include "parallel/context/context_parallel_hooks.h"

#include "core/common/checked_size.h"
#include "core/common/error.h"
#include "core/model/param_layout.h"
#include "core/optim/param_groups.h"
#include "core/model/stage_activations.h"
#include "kernels/backend.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/data_parallel/grad_buckets.h"
#include "parallel/data_parallel/muon_optimizer.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/plan/expert_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gptrain::parallel {

namespace {
// The model with its experts' share of the ffn width per --expert-tensor-parallel-size.
StageConfig with_expert_tp(const StageConfig& model, const ParallelArgs& opts) {
  StageConfig m = model;
  m.etp_size = model.moe.enabled() ? expert_tensor_parallel_size(opts) : 1;
  return m;
}
}  // namespace

MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, Backend& be) {
  return memory_plan(model, make_vocab_size_divisible_by, opts, pp_rank, dp_size, num_microbatches, be.compute_dtype(),
                     workspace_options(be));
}

StageParameterCounts stage_parameter_counts(const StageConfig& model, int make_vocab_size_divisible_by,
                                            const ParallelArgs& opts, int pp_rank, int dp_size) {
  const int tp = opts.tensor_model_parallel_size;
  const bool sp = opts.sequence_parallel && tp > 1;
  // The distributed optimizer shards inside an instance of DP / N ranks (--num-distributed-optimizer-instances).
  const int instances = std::max(1, opts.num_distributed_optimizer_instances);
  const int shard_dp = std::max(1, dp_size / instances);
  const int expert_dp =
      std::max(1, (model.moe.enabled() ? expert_data_parallel_size(opts, dp_size) : dp_size) / instances);
  StageParameterCounts counts;
  for (const ChunkRange& r : pipeline_chunks(opts, model.num_layers, pp_rank)) {
    const StageConfig cc = chunk_model_config(with_expert_tp(model, opts), make_vocab_size_divisible_by, tp, 0, sp, r,
                                              opts.expert_model_parallel_size);
    const ParamLayout layout = build_param_layout(cc);
    std::size_t shard = 0, padded = 0;
    if (opts.use_distributed_optimizer && opts.optimizer != "muon") {  // Muon's is layer-wise: no shards
      const std::size_t bucket =
          opts.ddp_bucket_size ? static_cast<std::size_t>(*opts.ddp_bucket_size) : default_bucket_elems(dp_size);
      std::vector<bool> expert;
      for (const ParamTensor& t : layout.tensors) expert.push_back(t.expert);
      for (const GradBucket& b : plan_grad_buckets(layout, {}, {}, bucket, shard_dp, expert, expert_dp)) {
        shard += b.shard;
        padded = checked_add(padded, checked_mul(b.shard, std::size_t(b.expert ? expert_dp : shard_dp), "memory plan"),
                             "memory plan");
      }
    }
    counts.elements.push_back(layout.total);
    counts.shard.push_back(shard);
    counts.padded.push_back(padded);
  }
  return counts;
}

MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, DType compute, const WorkspaceOptions& ws) {
  return memory_plan(model, make_vocab_size_divisible_by, opts, pp_rank, dp_size, num_microbatches, compute, ws,
                     stage_parameter_counts(model, make_vocab_size_divisible_by, opts, pp_rank, dp_size));
}

MemoryPlan memory_plan(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                       int pp_rank, int dp_size, int num_microbatches, DType compute, const WorkspaceOptions& ws,
                       const StageParameterCounts& counts) {
  MemoryPlan p;
  p.pp_rank = pp_rank;
  p.pp_size = opts.pipeline_model_parallel_size;
  p.tp_size = opts.tensor_model_parallel_size;
  p.dp_size = dp_size;
  p.layer_wise_optimizer = opts.use_distributed_optimizer && opts.optimizer == "muon";
  p.distributed_optimizer = opts.use_distributed_optimizer && !p.layer_wise_optimizer;
  p.dist_opt_instances = std::max(1, opts.num_distributed_optimizer_instances);
  p.expert_dp_size = model.moe.enabled() ? expert_data_parallel_size(opts, dp_size) : dp_size;
  p.cp_size = opts.context_parallel_size;
  p.seq_length = model.seq_length;
  p.recompute = describe_recompute(model.recompute);
  p.offload_layers = model.cpu_offload_layers;
  p.optimizer_host_fraction = optimizer_host_fraction(opts);
  const DType dt = compute;
  const std::size_t es = dtype_size(dt);
  // --bf16-stochastic-rounding: the bf16 parameters are their own masters (no 4-byte copy).
  p.master_weights = dt != DType::F32 && !opts.bf16_stochastic_rounding;
  p.stochastic_rounding = opts.bf16_stochastic_rounding;
  p.exp_avg_bytes = opts.exp_avg_dtype == "bf16" ? 2 : 4;
  p.exp_avg_sq_bytes = opts.exp_avg_sq_dtype == "bf16" ? 2 : 4;
  const bool sp = opts.sequence_parallel && p.tp_size > 1;
  p.sequence_parallel = sp;
  const std::vector<ChunkRange> ranges = pipeline_chunks(opts, model.num_layers, pp_rank);
  const int v = static_cast<int>(ranges.size());
  const std::vector<int> peak = pipeline_peak_in_flight(p.pp_size, pp_rank, num_microbatches, v);
  // Every byte count added and multiplied without wrapping: a plan beyond 64 bits is refused (checked_size.h).
  const std::string what = fmt::format("memory plan, pipeline stage {}", pp_rank);
  auto add = [&](std::size_t& acc, std::size_t x) { acc = checked_add(acc, x, what); };
  auto mul = [&](std::size_t a, std::size_t b) { return checked_mul(a, b, what); };
  std::size_t p2p_elems = 0;
  for (int c = 0; c < v; ++c) {
    const StageConfig cc = chunk_model_config(with_expert_tp(model, opts), make_vocab_size_divisible_by, p.tp_size, 0,
                                              sp, ranges[c], opts.expert_model_parallel_size, 0, 0, p.cp_size);
    const std::size_t n = counts.elements.at(std::size_t(c));
    const LocalSizes s = local_sizes(cc);
    p2p_elems = std::size_t(s.N_seq) * s.C;
    add(p.param_elements, n);
    add(p.parameters, mul(n, es));
    // --moe-router-enable-expert-bias: each layer's fp32 bias per expert (GptStage), held beside the parameters.
    if (cc.moe.expert_bias) add(p.parameters, mul(mul(std::size_t(cc.num_local_layers()), cc.moe.num_experts), 4));
    // --fp8-format: the layers' scaling state beside the parameters, the quantised operands' scratch (GptStage;
    // on CUDA with the dequantising fallback's, as the backend may refuse an fp8_gemm).
    if (cc.fp8.enabled) {
      const Fp8StageState::Sizes z = Fp8StageState::sizes_for(dt, cc, s, ws.backend != "cpu");
      add(p.parameters, z.state);
      add(p.workspace, z.total() - z.state);
    }
    add(p.gradients, mul(n, 4));
    // Optimizer range: the whole chunk, or its shards (DataParallelOptimizer: this rank's shard of every
    // gradient bucket, each bucket padded to D equal shards, D = DP, or EDP for a routed-expert bucket).
    const std::size_t shard = counts.shard.at(std::size_t(c)), padded = counts.padded.at(std::size_t(c));
    const std::size_t range = p.distributed_optimizer ? shard : n;
    // --optimizer-cpu-offload: AdamW's host cut (adamw.h) of the rank's updated elements
    const auto opt_host = static_cast<std::size_t>(std::llround(p.optimizer_host_fraction * double(range)));
    // m, v in their storage dtypes (--exp-avg-dtype, --exp-avg-sq-dtype; each array 4-byte aligned, as
    // AdamW allocates them) + the fp32 master; SGD keeps one fp32 momentum buffer instead of m and v
    const std::size_t v_bytes = opts.optimizer == "sgd" ? 0 : p.exp_avg_sq_bytes;
    auto state_bytes = [&](std::size_t elems) {
      auto array = [&](std::size_t es_state) { return checked_add(mul(elems, es_state), 3, what) / 4 * 4; };
      const std::size_t b = checked_add(array(p.exp_avg_bytes), array(v_bytes), what);
      return p.master_weights ? checked_add(b, mul(elems, 4), what) : b;
    };
    add(p.optimizer, state_bytes(range - opt_host));
    if (opts.optimizer == "muon") {
      // Muon's matrices keep one momentum buffer instead of Adam's two moments (muon_optimizer.h); its scratch:
      // the largest matrix's u, TP-gathered whole and gather blocks, and Newton-Schulz's Gram matrices.
      std::size_t muon = 0, largest = 0;
      const ParamLayout layout = build_param_layout(cc);
      for (const ParamTensor& t : layout.tensors)
        if (uses_muon(t)) muon += t.numel, largest = std::max(largest, t.numel);
      if (p.layer_wise_optimizer) {
        // Each DP rank's state covers the whole tensors it owns (layer_wise_owners): the most any rank holds.
        const std::vector<int> owner = layer_wise_owners(layout, dp_size);
        std::vector<std::size_t> mats(std::size_t(dp_size), 0), rest(std::size_t(dp_size), 0);
        for (std::size_t ti = 0; ti < layout.tensors.size(); ++ti)
          if (owner[ti] >= 0)
            (uses_muon(layout.tensors[ti]) ? mats : rest)[std::size_t(owner[ti])] += layout.tensors[ti].numel;
        std::size_t most = 0;
        for (int q = 0; q < dp_size; ++q)
          most =
              std::max(most, state_bytes(mats[std::size_t(q)] + rest[std::size_t(q)]) - mul(mats[std::size_t(q)], 4));
        p.optimizer -= state_bytes(range - opt_host);
        add(p.optimizer, most);
      } else {
        p.optimizer -= mul(muon, 4);
      }
      add(p.workspace, mul(mul(largest, 4), 1 + 5 * std::size_t(p.tp_size)));
    }
    add(p.optimizer_saved, state_bytes(opt_host));
    // m, v, master, gradient copy
    add(p.optimizer_host, mul(opt_host, p.exp_avg_bytes + v_bytes + 4 + 4));
    add(p.host_bytes_per_step, mul(opt_host, 4 + es));  // gradients down, parameters up
    // GradSync's padded fp32 blocks and reduced shard, ParamGather's padded blocks in the compute dtype.
    if (p.distributed_optimizer) add(p.workspace, checked_add(mul(shard, 4), mul(padded, 4 + es), what));
    // Traffic per step: every bucket padded to the shard group (buckets of routed experts over EDP).
    {
      const std::size_t gb = opts.grad_reduce_in_bf16 ? 2 : 4;
      const int n_inst = p.dist_opt_instances;
      const int group = p.distributed_optimizer ? dp_size / n_inst : dp_size;
      auto ring = [](std::size_t bytes, int ranks) { return ranks > 1 ? bytes / std::size_t(ranks) * (ranks - 1) : 0; };
      if (p.distributed_optimizer) {
        add(p.dp_grad_bytes, ring(mul(padded, gb), group));
        add(p.dp_inter_bytes, mul(2, ring(mul(shard, 4), n_inst)));
        add(p.dp_gather_bytes, ring(mul(padded, es), group));
      } else {
        add(p.dp_grad_bytes, mul(2, ring(mul(n, gb), dp_size)));
      }
    }
    // --grad-reduce-in-bf16: the buckets' bf16 copies (GradSync), padded blocks and shards when sharded.
    if (opts.grad_reduce_in_bf16 && dp_size > 1)
      add(p.workspace, mul(2, p.distributed_optimizer ? checked_add(padded, shard, what) : n));
    const std::size_t arena = StageActivations::arena_bytes_for(dt, cc, s);
    const std::size_t replay = StageActivations::replay_workspace_bytes_for(dt, cc, s);
    const std::size_t staging = StageActivations::offload_staging_bytes_for(dt, cc, s);
    const std::size_t host = StageActivations::offload_host_bytes_for(dt, cc, s);
    const std::size_t in_flight = std::size_t(peak[c]);
    if (host > 0) {
      StageConfig kept = cc;
      kept.cpu_offload_layers = 0;
      const std::size_t full = mul(StageActivations::arena_bytes_for(dt, kept, s), in_flight);
      const std::size_t left = checked_add(mul(arena, in_flight), staging, what);
      add(p.activations_saved, full > left ? full - left : 0);  // the slots can take all of it back (few in flight)
      add(p.activations_host, mul(host, in_flight));
      add(p.host_bytes_per_step, mul(mul(2, host), std::size_t(num_microbatches)));  // down and up per micro-batch
    }
    add(p.offload_staging, staging);
    add(p.activations, checked_add(checked_add(mul(arena, in_flight), replay, what), staging, what));
    add(p.activations_per_micro_batch, arena);
    add(p.replay_workspace, replay);
    p.in_flight += peak[c];
    p.backend = max_workspace(p.backend, backend_workspace(cc, dt, ws, n));
    if (p.cp_size > 1) {  // the ring's buffers are shared by the chunks (they grow to the largest call)
      const ContextExchangeBytes e = context_exchange_bytes(p.cp_size, s.B, s.T, s.NH, s.NKV, s.HS, dt);
      p.context_exchange = std::max(p.context_exchange, e.buffers);
      add(p.context_bytes_per_step,
          mul(mul(checked_add(e.forward, e.backward, what), std::size_t(cc.num_local_layers())),
              std::size_t(num_microbatches)));
    }
    // The token dispatcher's buffers, shared by the chunks (they grow to the largest layer call).
    if (opts.expert_model_parallel_size > 1 && cc.moe.enabled())
      p.expert_exchange =
          std::max(p.expert_exchange,
                   experts_over_tp(opts)
                       ? over_tp_buffer_bytes(s, opts.expert_model_parallel_size, es)
                       : exchange_buffer_bytes(s, opts.expert_model_parallel_size,
                                               parse_token_dispatcher_type(opts.moe_token_dispatcher_type), es));
  }
  add(p.workspace, p.expert_exchange);
  add(p.workspace, p.context_exchange);
  if (p.pp_size > 1) add(p.workspace, mul(mul(2, p2p_elems), es));  // DistributedGpt's receive buffers
  add(p.workspace, p.backend.total());
  // The totals the plan prints and checks: every part summed without wrapping.
  checked_add(
      checked_add(checked_add(checked_add(p.parameters, p.gradients, what), p.optimizer, what), p.activations, what),
      p.workspace, what);
  return p;
}

std::string format_bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
}

std::string format_bytes(std::size_t bytes) { return format_bytes(double(bytes)); }

namespace {
// " (backend: ...; expert exchange buffers ...)", or empty.
std::string workspace_parts(const MemoryPlan& p) {
  std::string s;
  if (p.backend.total()) s = "backend: " + describe_workspace(p.backend);
  if (p.expert_exchange)
    s += fmt::format("{}expert exchange buffers {}", s.empty() ? "" : "; ", format_bytes(p.expert_exchange));
  if (p.context_exchange)
    s += fmt::format("{}context-parallel K/V exchange buffers {}", s.empty() ? "" : "; ",
                     format_bytes(p.context_exchange));
  return s.empty() ? s : " (" + s + ")";
}

std::string format_offload(const MemoryPlan& p) {
  std::string s;
  if (p.offload_layers > 0)
    s += fmt::format("activations of the first {} layers {} (device saves {}, staging slots {})", p.offload_layers,
                     format_bytes(p.activations_host), format_bytes(p.activations_saved),
                     format_bytes(p.offload_staging));
  if (p.optimizer_host_fraction > 0)
    s +=
        fmt::format("{}{:g}% of the optimizer state {} (device saves {})", s.empty() ? "" : ", ",
                    100.0 * p.optimizer_host_fraction, format_bytes(p.optimizer_host), format_bytes(p.optimizer_saved));
  if (s.empty()) return s;
  return fmt::format("; host memory: {}; {} copied per step", s, format_bytes(p.host_bytes_per_step));
}

// "; data-parallel traffic per step 1.2 GiB sent per rank (...)", or empty with DP 1.
std::string format_dp_traffic(const MemoryPlan& p) {
  if (p.dp_size == 1) return std::string();
  const std::size_t total = p.dp_grad_bytes + p.dp_inter_bytes + p.dp_gather_bytes;
  if (!p.distributed_optimizer)
    return fmt::format("; data-parallel traffic {} sent per rank per step (gradient all-reduce)", format_bytes(total));
  std::string s = fmt::format("; data-parallel traffic {} sent per rank per step (gradient reduce-scatter {}",
                              format_bytes(total), format_bytes(p.dp_grad_bytes));
  if (p.dist_opt_instances > 1)
    s += fmt::format(", shard all-reduce across {} instances {}", p.dist_opt_instances, format_bytes(p.dp_inter_bytes));
  return s + fmt::format(", parameter all-gather {})", format_bytes(p.dp_gather_bytes));
}
}  // namespace

std::string format_memory_plan(const MemoryPlan& p) {
  std::string opt = p.exp_avg_bytes == 4 && p.exp_avg_sq_bytes == 4
                        ? "moments"
                        : fmt::format("moments (exp_avg {}, exp_avg_sq {})", p.exp_avg_bytes == 2 ? "bf16" : "fp32",
                                      p.exp_avg_sq_bytes == 2 ? "bf16" : "fp32");
  if (p.master_weights) opt += " + fp32 master weights";
  if (p.layer_wise_optimizer) opt += fmt::format(", whole tensors over {} data-parallel ranks (layer-wise)", p.dp_size);
  if (p.stochastic_rounding) opt += ", no master weights (--bf16-stochastic-rounding)";
  if (p.distributed_optimizer) {
    const int n = p.dist_opt_instances;
    opt += fmt::format(", sharded over {} data-parallel ranks", p.dp_size / n);
    if (p.expert_dp_size != p.dp_size) opt += fmt::format(", routed experts over {}", p.expert_dp_size / n);
    if (n > 1) opt += fmt::format(" (each of {} distributed-optimizer instances holds a replica)", n);
  }
  if (p.optimizer_host_fraction > 0) opt += ", the device part";
  return fmt::format(
      "memory plan, pipeline stage {} of {} (per rank, TP {}): {} parameters; parameters {}, "
      "gradients {}, optimizer state {} ({}), activations {} ({} micro-batch{} in flight, {} each; recompute {}{}), "
      "workspace {}{}{}, total {}{}{}{}{}",
      p.pp_rank, p.pp_size, p.tp_size, p.param_elements, format_bytes(p.parameters), format_bytes(p.gradients),
      format_bytes(p.optimizer), opt, format_bytes(p.activations), p.in_flight, p.in_flight == 1 ? "" : "es",
      format_bytes(p.activations_per_micro_batch), p.recompute,
      p.replay_workspace ? fmt::format(", replay workspace {}", format_bytes(p.replay_workspace)) : std::string(),
      p.backend.plan_workspace_unknown ? ">= " : "", format_bytes(p.workspace), workspace_parts(p),
      p.backend.plan_workspace_unknown ? ">= " : "", format_bytes(p.total()), format_offload(p), format_dp_traffic(p),
      p.cp_size > 1 ? fmt::format("; context parallel {}: {} sent per step in the K/V ring", p.cp_size,
                                  format_bytes(p.context_bytes_per_step))
                    : std::string());
}

void check_cpu_address_space(const MemoryPlan& p, std::optional<std::size_t> left) {
  if (!left || p.total() + kCpuBackendAddressReserve <= *left) return;
  fail(
      "the address-space limit (ulimit -v) leaves this process {}, but the CPU backend needs {}: the memory "
      "plan's {} and {} of address space its threads reserve (OpenBLAS's GEMM buffer, per-thread heaps; mostly "
      "never touched): raise or lift ulimit -v (a cgroup memory limit bounds the memory in use instead)",
      format_bytes(*left), format_bytes(p.total() + kCpuBackendAddressReserve), format_bytes(p.total()),
      format_bytes(kCpuBackendAddressReserve));
}

void check_memory_plan_fits(const MemoryPlan& p, std::size_t free_bytes, std::size_t device_bytes,
                            const std::string& recompute_fit, const std::string& offload_fit,
                            const std::string& host_limit) {
  if (p.total() <= free_bytes) return;
  std::string advice;
  if (p.states() + p.workspace > free_bytes) {
    advice = "split the model further with --tensor-model-parallel-size / --pipeline-model-parallel-size";
    if (!p.distributed_optimizer && !p.layer_wise_optimizer && p.dp_size > 1)
      advice += fmt::format(
          ", or shard the optimizer state over the {} data-parallel ranks with "
          "--use-distributed-optimizer",
          p.dp_size);
    if (p.distributed_optimizer && p.dist_opt_instances > 1)
      advice += fmt::format(
          ", or shard the optimizer state over more ranks with a lower --num-distributed-optimizer-instances (now {}: "
          "sharded over {} of the {} data-parallel ranks)",
          p.dist_opt_instances, p.dp_size / p.dist_opt_instances, p.dp_size);
    if (!offload_fit.empty()) advice += fmt::format(", or offload to host memory: {}", offload_fit);
  } else {
    advice = recompute_fit.empty() ? std::string() : fmt::format("it fits with {}; or ", recompute_fit);
    if (!offload_fit.empty()) advice += fmt::format("offload to host memory: {}; or ", offload_fit);
    advice += "lower --micro-batch-size (activations scale with it)";
    if (p.tp_size > 1 && !p.sequence_parallel) advice += ", add --sequence-parallel";
    advice += ", or raise --tensor-model-parallel-size";
    // Activations scale with the local sequence: context parallelism splits it (2 x CP chunks per sequence).
    if (p.seq_length > 0 && p.seq_length % (4 * p.cp_size) == 0)
      advice += fmt::format(", or split each sequence over more ranks with --context-parallel-size {}", 2 * p.cp_size);
  }
  const std::string room =
      host_limit.empty()
          ? fmt::format("the device has {} free of {}", format_bytes(free_bytes), format_bytes(device_bytes))
          : fmt::format("this process has {} {}", format_bytes(free_bytes), host_limit);
  fail(
      "memory plan: pipeline stage {} needs {} per rank (parameters, gradients and optimizer state {}, activations "
      "{} for {} micro-batches in flight, workspace {}) but {}: {}",
      p.pp_rank, format_bytes(p.total()), format_bytes(p.states()), format_bytes(p.activations), p.in_flight,
      format_bytes(p.workspace), room, advice);
}

}  // namespace gptrain::parallel
