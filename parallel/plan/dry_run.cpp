#include "parallel/plan/dry_run.h"

#include "core/checkpoint/checkpoint_tokenizer.h"
#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/hf/family.h"
#include "core/model/param_layout.h"
#include "core/model/stage_activations.h"
#include "core/train/setup.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/plan/expert_exchange.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/plan/offload_plan.h"
#include "parallel/plan/recompute_plan.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace gptrain::parallel {

namespace {

// The backend a run with these flags would use, without allocating on a device (setup.h's
// planned_backend_name: --device auto plans cuda only where a GPU is visible, as the run falls back to
// cpu without one). --device cuda plans a GPU run from any machine.
std::string planned_backend(const TrainArgs& a, bool prints) {
  const std::string dev = planned_backend_name(a);
#ifndef GPTRAIN_HAVE_CUDA
  if (dev == "cuda" && prints)
    log::warn("--dry-run --device cuda: this build has no CUDA backend; planning only (the run needs a CUDA build)");
#else
  (void)prints;  // only the CPU-only build has a warning to print
#endif
  if (dev == "cpu") {
    TrainArgs cpu = a;
    cpu.backend.device = "cpu";
    make_training_backend(cpu);  // the cpu backend's own checks (fp32 only, one attention); allocates nothing
  }
  return dev;
}

// Elements of the whole model, each tensor once at its global shape (the run's padded vocabulary).
std::size_t unique_parameters(StageConfig c, int make_vocab_size_divisible_by) {
  c.tp_rank = 0;
  c.layer_first = 0;
  c.layer_last = -1;
  c.has_embedding = c.has_head = true;
  c.finalize(make_vocab_size_divisible_by);
  std::size_t n = 0;
  for (const ParamTensor& t : build_param_layout(c).tensors) {
    std::size_t e = 1;
    for (int64_t d : t.global_shape) e *= std::size_t(d);
    n += e;
  }
  return n;
}

std::string layers_text(const ChunkRange& r) {
  std::string s = r.first < r.last ? fmt::format("layers {}-{}", r.first, r.last - 1) : std::string("no layers");
  if (r.has_embedding) s += ", embedding";
  if (r.has_head) s += ", head";
  return s;
}

// The plans of every stage under each recomputation choice (recompute_plan.h): per choice, the
// activations of one micro-batch (stage 0), the per-rank totals of the first and last stage, the
// forward work replayed; then the per-layer figures next to Korthikanti et al.'s formulas.
std::vector<std::vector<RecomputeChoice>> choices_per_stage(const TrainArgs& a, const StageConfig& model,
                                                            const WorkspaceOptions& ws) {
  std::vector<std::vector<RecomputeChoice>> out;
  for (int r = 0; r < a.parallel.pipeline_model_parallel_size; ++r)
    out.push_back(recompute_choices(model, a.model.make_vocab_size_divisible_by, a.parallel, r,
                                    a.data_parallel_size * a.parallel.context_parallel_size, a.num_micro_batches,
                                    a.params_dtype, ws));
  return out;
}

bool shown(const RecomputeConfig& r, int most) {
  if (!r.full()) return true;
  return r.num_layers == 1 || r.num_layers == most || (r.method == RecomputeMethod::Block && r.num_layers == most / 2);
}

void print_recompute_table(const TrainArgs& a, const StageConfig& model, const WorkspaceOptions& ws) {
  const auto stages = choices_per_stage(a, model, ws);
  const int last = int(stages.size()) - 1;
  int most = 0;
  for (const RecomputeChoice& c : stages[0]) most = std::max(most, c.recompute.num_layers);
  log::info(
      "pretrain_gpt --dry-run: recomputation choices (per rank; this run: {}): activations per micro-batch (stage 0) "
      "| activations, stage 0 | total, stage 0 | total, stage {} | forward replayed",
      describe_recompute(model.recompute), last);
  for (std::size_t i = 0; i < stages[0].size(); ++i) {
    const RecomputeChoice& c = stages[0][i];
    if (!shown(c.recompute, most)) continue;
    log::info("pretrain_gpt --dry-run:   {:<40} {:>12} {:>12} {:>12} {:>12} {:>6.1f}%", describe_recompute(c.recompute),
              format_bytes(c.plan.activations_per_micro_batch), format_bytes(c.plan.activations),
              format_bytes(c.plan.total()), format_bytes(stages[last][i].plan.total()), 100.0 * c.extra_forward);
  }
  const int tp = a.parallel.tensor_model_parallel_size;
  const bool sp = a.parallel.sequence_parallel && tp > 1;
  const PaperActivations paper = paper_activations_per_layer(model, tp, sp);
  // gptrain's own per-layer bytes: the arena of a chunk with two layers minus one with one layer.
  const int div = a.model.make_vocab_size_divisible_by;
  auto per_layer = [&](const RecomputeConfig& r) {
    StageConfig m = model;
    m.recompute = r;
    auto arena = [&](int layers) {
      ChunkRange cr{0, layers, false, false};
      const StageConfig cc = chunk_model_config(m, div, tp, 0, sp, cr, a.parallel.expert_model_parallel_size, 0, 0,
                                                a.parallel.context_parallel_size);
      return double(StageActivations::arena_bytes_for(a.params_dtype, cc, local_sizes(cc)));
    };
    return arena(2) - arena(1);
  };
  RecomputeConfig sel;
  sel.granularity = RecomputeGranularity::Selective;
  sel.core_attn = true;
  RecomputeConfig full;
  full.granularity = RecomputeGranularity::Full;
  full.num_layers = 1;
  log::info(
      "pretrain_gpt --dry-run: activations per layer and micro-batch ({}): gptrain none {}, selective (core_attn) {}, "
      "full {}; Korthikanti et al. 2022 at 16 bits: sbh(34 + 5as/h){} = {}, selective {} = {}, full {} = {}",
      dtype_name(a.params_dtype), format_bytes(per_layer({})), format_bytes(per_layer(sel)),
      format_bytes(per_layer(full)), sp ? "/t" : " (t: sbh(10 + 24/t + 5as/(ht)))", format_bytes(paper.none),
      sp ? "34sbh/t" : "sbh(10 + 24/t)", format_bytes(paper.selective), sp ? "2sbh/t" : "2sbh",
      format_bytes(paper.full));
}

// --dry-run-device-memory: every stage's plan must fit; otherwise fail naming the cheapest
// recomputation under which every stage fits (the stage that does not fit now is named).
void check_plans_fit(const TrainArgs& a, const StageConfig& model, const WorkspaceOptions& ws) {
  const std::size_t device = std::size_t(*a.dry_run_device_memory * 1024.0 * 1024.0 * 1024.0);
  // Each choice with the plan of its fullest stage: it fits when that one does.
  std::vector<RecomputeChoice> worst;
  for (const auto& st : choices_per_stage(a, model, ws))
    for (std::size_t i = 0; i < st.size(); ++i) {
      if (worst.size() <= i) worst.push_back(st[i]);
      if (st[i].plan.total() > worst[i].plan.total()) worst[i].plan = st[i].plan;
    }
  const std::optional<RecomputeChoice> best = cheapest_fitting_recompute(worst, device);
  const std::string fit = best ? best->flags : std::string();
  // The same for offloading, once a plan does not fit (the choices are many).
  std::string offload_fit;
  for (int r = 0; r < a.parallel.pipeline_model_parallel_size; ++r) {
    const MemoryPlan plan =
        memory_plan(model, a.model.make_vocab_size_divisible_by, a.parallel, r,
                    a.data_parallel_size * a.parallel.context_parallel_size, a.num_micro_batches, a.params_dtype, ws);
    if (plan.total() <= device) continue;
    std::vector<OffloadChoice> worst_offload;
    for (int q = 0; q < a.parallel.pipeline_model_parallel_size; ++q) {
      const std::vector<OffloadChoice> st = offload_choices(model, a.model.make_vocab_size_divisible_by, a.parallel, q,
                                                            a.data_parallel_size * a.parallel.context_parallel_size,
                                                            a.num_micro_batches, a.params_dtype, ws);
      for (std::size_t i = 0; i < st.size(); ++i) {
        if (worst_offload.size() <= i) worst_offload.push_back(st[i]);
        if (st[i].plan.total() > worst_offload[i].plan.total()) worst_offload[i].plan = st[i].plan;
      }
    }
    const std::optional<OffloadChoice> o = cheapest_fitting_offload(worst_offload, device);
    offload_fit = o ? offload_advice(*o) : std::string();
    break;
  }
  for (int r = 0; r < a.parallel.pipeline_model_parallel_size; ++r) {
    const MemoryPlan plan =
        memory_plan(model, a.model.make_vocab_size_divisible_by, a.parallel, r,
                    a.data_parallel_size * a.parallel.context_parallel_size, a.num_micro_batches, a.params_dtype, ws);
    check_memory_plan_fits(plan, device, device, fit, offload_fit);
  }
}

}  // namespace

int pretrain_gpt_dry_run(const TrainArgs& args, bool prints) {
  if (prints)
    for (const std::string& line : args.checkpoint_args_lines) log::info("{}", line);
  const std::string backend = planned_backend(args, prints);
  const ParallelArgs& popt = args.parallel;
  const VocabInfo vocab = vocab_info(args);
  const StageConfig model = stage_config_from_args(args, vocab.vocab_size);
  check_attention_head_dim(backend, model.kv_channels, "the planned " + backend + " backend");  // as the run will
  const int tp = popt.tensor_model_parallel_size, pp = popt.pipeline_model_parallel_size;
  const int dp = args.data_parallel_size, m = args.num_micro_batches, div = args.model.make_vocab_size_divisible_by;
  const int chunks = num_model_chunks(popt, model.num_layers);
  const int cp = popt.context_parallel_size;
  const int world = tp * pp * cp * dp;
  ProcessGrid(world, 0, grid_sizes(popt));  // the run's layout checks (EP must divide DP), before any plan
  const DType dt = args.params_dtype;
  const std::size_t total = unique_parameters(model, div);
  const WorkspaceOptions ws =
      workspace_options(backend, args.backend.attention_backend, args.backend.deterministic_mode);

  // The plan of every pipeline stage, the lines the run itself prints before step 1 (parallel/train).
  std::vector<std::string> lines;
  for (int r = 0; r < pp; ++r) {
    std::string where;
    for (const ChunkRange& cr : pipeline_chunks(popt, model.num_layers, r))
      where += (where.empty() ? "" : "; ") + layers_text(cr);
    const MemoryPlan plan = memory_plan(model, div, popt, r, dp * cp, m, dt, ws);  // gradients over DP x CP
    lines.push_back(fmt::format("{} ({})", format_memory_plan(plan), where));
  }
  if (args.dry_run_device_memory) check_plans_fit(args, model, ws);
  if (!prints) return 0;
  if (args.dry_run_device_memory)
    log::info("pretrain_gpt --dry-run: every rank's plan fits {:.2f} GiB per device (--dry-run-device-memory)",
              *args.dry_run_device_memory);

  // What the run checks before step 1 besides allocating: the data, the checkpoint to load, --save.
  const DataArgs& d = args.data;
  if (d.mock_data || !d.data_path.empty() || !d.train_data_path.empty())
    plan_training_datasets(args, vocab);
  else
    log::info("pretrain_gpt --dry-run: no --data-path given: a model plan only, no data checked");
  if (const std::optional<checkpoint::Checkpoint> ck = checkpoint_to_load(args.checkpoint)) {
    check_checkpoint_vocabulary(*ck, args.tokenizer, model.vocab_size, model.padded_vocab_size);
    checkpoint::check_optimizer_state(*ck, !args.checkpoint.finetune && !args.checkpoint.no_load_optim);
    if (args.moe.moe_use_upcycling)
      checkpoint::check_upcycling_source(*ck, model);
    else
      checkpoint::check_model_tensors(*ck, model);
    // The run verifies every checksum before loading (and can fall back to an earlier checkpoint); the dry
    // run, one process, reads the files once to say whether that will be needed.
    if (const std::optional<std::string> damage = ck->verify())
      fail(
          "--load: {} is damaged: {} (the run would stop here; --ckpt-fallback-to-intact loads the newest earlier "
          "checkpoint that passes)",
          ck->dir(), *damage);
    log::info("pretrain_gpt --dry-run: --load {}: iteration {} fits this model, checksums verified", ck->dir(),
              ck->metadata().iteration);
  }
  check_save_dir(args.checkpoint);

  log::info("pretrain_gpt --dry-run: family {}, {} parameters in total ({:.3f} B; padded vocabulary {} for {} tokens)",
            hf::default_family(model), total, double(total) / 1e9, model.padded_vocab_size, vocab.vocab_size);
  if (model.moe.enabled()) {
    // The parameters a token goes through: all but the experts it is not routed to.
    std::size_t experts = 0;
    StageConfig whole = model;  // the whole model in one process: every expert, not one EP rank's share
    whole.ep_size = 1, whole.ep_rank = 0, whole.etp_size = 1, whole.etp_rank = 0;
    for (const ParamTensor& t : build_param_layout(whole).tensors)
      if (t.expert) experts += t.numel;
    const std::size_t active = total - experts + experts / std::size_t(model.moe.num_experts) * model.moe.topk;
    log::info(
        "pretrain_gpt --dry-run: mixture of experts: {} MoE layers of {} experts, top-{}: {} parameters "
        "active per token ({:.3f} B), {} in the experts",
        model.moe.num_moe_layers(), model.moe.num_experts, model.moe.topk, active, double(active) / 1e9, experts);
  }
  std::string layout = fmt::format("TP {} x PP {}", tp, pp);
  if (cp > 1) layout = fmt::format("TP {} x CP {} x PP {}", tp, cp, pp);
  if (chunks > 1) layout += fmt::format(" ({} chunks per rank)", chunks);
  layout += fmt::format(" x DP {} = {} process{}", dp, world, world == 1 ? "" : "es");
  if (popt.sequence_parallel && tp > 1) layout += ", sequence parallel";
  if (popt.use_distributed_optimizer) layout += ", distributed optimizer";
  if (popt.num_distributed_optimizer_instances > 1)
    layout += fmt::format(" in {} instances (hybrid sharding)", popt.num_distributed_optimizer_instances);
  // With a batch ramp the plan is for the largest batch (args.num_micro_batches).
  const bool ramp = !args.training.rampup_batch_size.empty() || args.training.step_batch_size_schedule;
  log::info(
      "pretrain_gpt --dry-run: {} backend, {} compute; layout {}; {}{} micro-batches of {} x {} tokens per DP rank "
      "and iteration",
      backend, dtype_name(dt), layout, ramp ? "up to " : "", m, *args.training.micro_batch_size,
      *args.model.seq_length);
  for (const std::string& l : lines) log::info("pretrain_gpt --dry-run: {}", l);
  if (const std::string ep = describe_expert_parallelism(model, popt, dp, m, dt); !ep.empty())
    log::info("pretrain_gpt --dry-run: {}", ep);
  print_recompute_table(args, model, ws);
  log::info("pretrain_gpt --dry-run: not counted: {}; no model allocated, no sample index built",
            backend == "cuda" ? "CUDA context, cuDNN's plan workspace, NCCL buffers" : "allocator overhead");
  return 0;
}

}  // namespace gptrain::parallel
