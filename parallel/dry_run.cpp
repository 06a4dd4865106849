#include "parallel/dry_run.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/param_layout.h"
#include "core/train/memory_plan.h"
#include "core/train/pretrain.h"
#include "core/train/trainer.h"
#include "parallel/options.h"
#include "parallel/pipeline_layout.h"
#include "parallel/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gptrain::parallel {

namespace {

// The backend a run with these flags would use, without opening a device: --device auto means cuda
// in a CUDA build (a run without a usable GPU falls back to cpu) and cpu otherwise. --device cuda
// plans a GPU run from any machine (a CPU-only build warns that it cannot run it).
std::string planned_backend(const TrainArgs& a, bool prints) {
  std::string dev = a.device;
#ifdef GPTRAIN_HAVE_CUDA
  if (dev == "auto") dev = "cuda";
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

// Activation arenas each model chunk of pipeline rank `rank` keeps: the most micro-batches between
// their forward and backward at once in its schedule (DistributedGpt's pool never shrinks below that).
std::vector<int> peak_in_flight(int pp, int rank, int micro_batches, int chunks) {
  std::vector<int> live(std::size_t(chunks), 0), peak(std::size_t(chunks), 0);
  for (const PipeOp& op : pipeline_schedule(pp, rank, micro_batches, chunks)) {
    live[std::size_t(op.chunk)] += op.forward ? 1 : -1;
    peak[std::size_t(op.chunk)] = std::max(peak[std::size_t(op.chunk)], live[std::size_t(op.chunk)]);
  }
  return peak;
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
  const DType dt = args.params_dtype;

  // Every pipeline rank's chunks, configured as DistributedGpt configures them (TP ranks of one
  // pipeline rank hold equal shards, so TP rank 0 stands for all).
  struct RankPlan {
    std::vector<ChunkRange> ranges;
    std::vector<MemoryPlan> plans;
    std::size_t parameters = 0;
  };
  std::vector<RankPlan> ranks(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    RankPlan& rp = ranks[std::size_t(r)];
    rp.ranges = pipeline_chunks(popt, model.num_layers, r);
    const std::vector<int> in_flight = peak_in_flight(pp, r, m, chunks);
    for (std::size_t k = 0; k < rp.ranges.size(); ++k) {
      const ChunkRange& cr = rp.ranges[k];
      ModelConfig c = model;
      c.tp_size = tp;
      c.tp_rank = 0;
      c.sequence_parallel = args.sequence_parallel && tp > 1;
      c.layer_first = cr.first;
      c.layer_last = cr.last;
      c.has_embedding = cr.has_embedding;
      c.has_head = cr.has_head;
      c.finalize(div);
      const std::size_t n = build_param_layout(c).total;
      const std::size_t opt_elems = args.use_distributed_optimizer ? (n + std::size_t(dp) - 1) / std::size_t(dp) : n;
      rp.plans.push_back(memory_plan_for(c, dt, opt_elems, in_flight[k]));
      rp.parameters += n;
    }
  }
  const std::size_t total = unique_parameters(model, div);
  if (!prints) return 0;

  log::info("pretrain_gpt --dry-run: family {}, {} parameters in total ({:.3f} B; padded vocabulary {} for {} tokens)",
            model_family(model), total, double(total) / 1e9, model.padded_vocab_size, vocab.vocab_size);
  const int world = tp * pp * dp;
  std::string layout = fmt::format("TP {} x PP {}", tp, pp);
  if (chunks > 1) layout += fmt::format(" ({} chunks per rank)", chunks);
  layout += fmt::format(" x DP {} = {} process{}", dp, world, world == 1 ? "" : "es");
  if (args.sequence_parallel && tp > 1) layout += ", sequence parallel";
  if (args.use_distributed_optimizer) layout += ", distributed optimizer";
  log::info("pretrain_gpt --dry-run: {} backend, {} compute; layout {}; {} micro-batches of {} x {} tokens per DP rank "
            "and iteration", backend, dtype_name(dt), layout, m, *args.micro_batch_size, *args.seq_length);
  const std::string each_tp = tp > 1 ? fmt::format(", each of its {} TP ranks", tp) : std::string();
  for (int r = 0; r < pp; ++r) {
    const RankPlan& rp = ranks[std::size_t(r)];
    const bool tied_copy = r == pp - 1 && pp > 1 && model.tied_head();
    const std::string params =
        fmt::format("{} parameters{}", rp.parameters, tied_copy ? " (incl. the tied copy of the word embeddings)" : "");
    if (rp.plans.size() == 1) {
      log::info("pretrain_gpt --dry-run: pipeline rank {} ({}){}: {}; {}", r, layers_text(rp.ranges[0]), each_tp, params,
                format_memory_plan(rp.plans[0]));
      continue;
    }
    std::size_t total_bytes = 0;
    for (std::size_t k = 0; k < rp.plans.size(); ++k) {
      log::info("pretrain_gpt --dry-run:   pipeline rank {} chunk {} ({}): {}", r, k, layers_text(rp.ranges[k]),
                format_memory_plan(rp.plans[k]));
      total_bytes += rp.plans[k].total();
    }
    log::info("pretrain_gpt --dry-run: pipeline rank {} ({} chunks){}: {}; memory plan total {}", r, rp.plans.size(),
              each_tp, params, format_bytes(total_bytes));
  }
  log::info("pretrain_gpt --dry-run: not counted: communication buffers{}; no model allocated, no data read",
            backend == "cuda" ? ", CUDA context and library workspaces" : "");
  return 0;
}

}  // namespace gptrain::parallel
