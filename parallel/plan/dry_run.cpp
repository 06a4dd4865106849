#include "parallel/plan/dry_run.h"

#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/param_layout.h"
#include "core/train/setup.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/plan/memory_plan.h"

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
std::size_t unique_parameters(ModelConfig c, int make_vocab_size_divisible_by) {
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

}  // namespace

int pretrain_gpt_dry_run(const TrainArgs& args, bool prints) {
  const std::string backend = planned_backend(args, prints);
  const ParallelArgs& popt = args.parallel;
  const VocabInfo vocab = vocab_info(args);
  const ModelConfig model = model_config_from_args(args, vocab.vocab_size);
  const int tp = popt.tensor_model_parallel_size, pp = popt.pipeline_model_parallel_size;
  const int dp = args.data_parallel_size, m = args.num_micro_batches, div = args.model.make_vocab_size_divisible_by;
  const int chunks = num_model_chunks(popt, model.num_layers);
  const int world = tp * pp * dp;
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
    const MemoryPlan plan = memory_plan(model, div, popt, r, dp, m, dt, ws);
    lines.push_back(fmt::format("{} ({})", format_memory_plan(plan), where));
  }
  if (!prints) return 0;

  // What the run checks before step 1 besides allocating: the data, the checkpoint to load, --save.
  const DataArgs& d = args.data;
  if (d.mock_data || !d.data_path.empty() || !d.train_data_path.empty())
    plan_training_datasets(args, vocab);
  else
    log::info("pretrain_gpt --dry-run: no --data-path given: a model plan only, no data checked");
  if (const std::optional<checkpoint::Checkpoint> ck = checkpoint_to_load(args.checkpoint)) {
    checkpoint::check_optimizer_state(*ck, !args.checkpoint.finetune && !args.checkpoint.no_load_optim);
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
            model_family(model), total, double(total) / 1e9, model.padded_vocab_size, vocab.vocab_size);
  std::string layout = fmt::format("TP {} x PP {}", tp, pp);
  if (chunks > 1) layout += fmt::format(" ({} chunks per rank)", chunks);
  layout += fmt::format(" x DP {} = {} process{}", dp, world, world == 1 ? "" : "es");
  if (popt.sequence_parallel && tp > 1) layout += ", sequence parallel";
  if (popt.use_distributed_optimizer) layout += ", distributed optimizer";
  // With a batch ramp the plan is for the largest batch (args.num_micro_batches).
  const bool ramp = !args.training.rampup_batch_size.empty() || args.training.step_batch_size_schedule;
  log::info(
      "pretrain_gpt --dry-run: {} backend, {} compute; layout {}; {}{} micro-batches of {} x {} tokens per DP rank "
      "and iteration",
      backend, dtype_name(dt), layout, ramp ? "up to " : "", m, *args.training.micro_batch_size,
      *args.model.seq_length);
  for (const std::string& l : lines) log::info("pretrain_gpt --dry-run: {}", l);
  log::info("pretrain_gpt --dry-run: not counted: {}; no model allocated, no sample index built",
            backend == "cuda" ? "CUDA context, cuDNN's plan workspace, NCCL buffers" : "allocator overhead");
  return 0;
}

}  // namespace gptrain::parallel
