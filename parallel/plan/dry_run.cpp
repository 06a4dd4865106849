#include "parallel/plan/dry_run.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/param_layout.h"
#include "core/train/memory_plan.h"
#include "core/train/pretrain.h"
#include "core/train/trainer.h"
#include "kernels/backend.h"
#include "parallel/train/options.h"
#include "parallel/pipeline/pipeline_layout.h"
#include "parallel/plan/rank_memory_plan.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace gptrain::parallel {

namespace {

// The backend a run with these flags would use, without allocating on a device: --device auto means
// cuda in a CUDA build when a GPU is visible (the run falls back to cpu without one, so the plan does
// too) and cpu otherwise. --device cuda plans a GPU run from any machine (a CPU-only build warns that
// it cannot run it).
std::string planned_backend(const TrainArgs& a, bool prints) {
  std::string dev = a.device;
#ifdef GPTRAIN_HAVE_CUDA
  (void)prints;  // only the CPU-only build has a warning to print
  if (dev == "auto") dev = cuda_device_count() > 0 ? "cuda" : "cpu";
#else
  if (dev == "auto") dev = "cpu";
  if (dev == "cuda" && prints)
    log::warn("--dry-run --device cuda: this build has no CUDA backend; planning only (the run needs a CUDA build)");
#endif
  if (dev == "cpu") {
    TrainArgs cpu = a;
    cpu.device = "cpu";
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
  const ParallelOptions popt = parallel_options_from(args);
  validate_parallel_options(popt);
  const VocabInfo vocab = vocab_info(args);
  const ModelConfig model = model_config_from_args(args, vocab.vocab_size);
  const int tp = args.tensor_model_parallel_size, pp = args.pipeline_model_parallel_size;
  const int dp = args.data_parallel_size, m = args.num_micro_batches, div = args.make_vocab_size_divisible_by;
  const int chunks = num_model_chunks(popt, model.num_layers);
  const int world = tp * pp * dp;
  const DType dt = args.params_dtype;
  const std::size_t total = unique_parameters(model, div);
  const WorkspaceOptions ws = workspace_options(backend, args.attention_backend, args.deterministic_mode);

  // One process trains the whole model with one activation arena (core/train/pretrain.cpp: the plan it
  // prints before step 1); several run DistributedGpt, whose per-stage plan pretrain_parallel prints.
  std::vector<std::string> lines;
  if (world == 1) {
    const std::size_t n = build_param_layout(model).total;
    lines.push_back(fmt::format("{} parameters; {}", n, format_memory_plan(memory_plan_for(model, dt, n, 1, ws))));
  } else {
    for (int r = 0; r < pp; ++r) {
      std::string where;
      for (const ChunkRange& cr : pipeline_chunks(popt, model.num_layers, r))
        where += (where.empty() ? "" : "; ") + layers_text(cr);
      const RankMemoryPlan plan = rank_memory_plan(model, div, popt, r, dp, m, dt, ws);
      lines.push_back(fmt::format("{} ({})", format_rank_memory_plan(plan), where));
    }
  }
  if (!prints) return 0;

  log::info("pretrain_gpt --dry-run: family {}, {} parameters in total ({:.3f} B; padded vocabulary {} for {} tokens)",
            model_family(model), total, double(total) / 1e9, model.padded_vocab_size, vocab.vocab_size);
  std::string layout = fmt::format("TP {} x PP {}", tp, pp);
  if (chunks > 1) layout += fmt::format(" ({} chunks per rank)", chunks);
  layout += fmt::format(" x DP {} = {} process{}", dp, world, world == 1 ? "" : "es");
  if (args.sequence_parallel && tp > 1) layout += ", sequence parallel";
  if (args.use_distributed_optimizer) layout += ", distributed optimizer";
  log::info("pretrain_gpt --dry-run: {} backend, {} compute; layout {}; {} micro-batches of {} x {} tokens per DP rank "
            "and iteration", backend, dtype_name(dt), layout, m, *args.micro_batch_size, *args.seq_length);
  for (const std::string& l : lines) log::info("pretrain_gpt --dry-run: {}", l);
  log::info("pretrain_gpt --dry-run: not counted: {}; no model allocated, no data read",
            backend == "cuda" ? "CUDA context, cuDNN's plan workspace, NCCL buffers" : "allocator overhead");
  return 0;
}

}  // namespace gptrain::parallel
