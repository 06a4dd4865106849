#include "parallel/train/pretrain_parallel.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/train/pretrain.h"
#include "core/train/trainer.h"
#include "parallel/plan/dry_run.h"
#include "parallel/train/parallel_runner.h"
#include "parallel/plan/rank_memory_plan.h"

#include <optional>
#include <string>

namespace gptrain::parallel {

int pretrain_gpt_parallel_main(MpiRuntime& mpi, int argc, char** argv) {
  const TrainArgs args = parse_train_args(argc, argv, mpi.world_size());
  if (args.dry_run) return pretrain_gpt_dry_run(args, mpi.rank() == 0);  // before any communicator exists
  const ParallelOptions popt = parallel_options_from(args);
  validate_parallel_options(popt);
  ProcessGrid grid(mpi.world_size(), mpi.rank(), popt.grid_sizes());
  const bool logs = mpi.rank() == mpi.world_size() - 1;  // Megatron's logging rank
  log::set_silenced(!logs && mpi.rank() != 0);
  log::set_primary(logs);  // its iteration and validation lines match the single process's byte for byte

  auto be = make_training_backend(args);
  CommOptions copt;
  copt.timeout_seconds = popt.timeout_seconds();
  copt.staging = be.get();
  const std::string comm = resolve_comm_backend(popt, be->name());
  GridComms comms = make_grid_comms(grid, copt, comm);
  log::info("pretrain_gpt: {} ({} backend, {} communicators)", grid.describe(), be->name(), comm);

  const VocabInfo vocab = vocab_info(args);
  const ModelConfig cfg = model_config_from_args(args, vocab.vocab_size);
  BuildSync sync;
  sync.builds_cache = mpi.rank() == 0;
  sync.barrier = [&] { comms.host_world().barrier(); };
  GPTDatasets data = training_datasets(args, vocab, sync);

  // Before anything is allocated: the logging rank prints every pipeline stage's plan, each rank
  // checks its own against its GPU.
  for (int stage = 0; stage < grid.pp_size(); ++stage) {
    if (!logs && stage != grid.pp_rank()) continue;
    const RankMemoryPlan plan = rank_memory_plan(cfg, args.make_vocab_size_divisible_by, popt, stage, grid.dp_size(),
                                                 args.num_micro_batches, *be);
    if (logs) log::info("pretrain_gpt: {}", format_rank_memory_plan(plan));
    if (stage != grid.pp_rank() || std::string(be->name()) != "cuda") continue;
    if (const std::optional<DeviceMemory> m = be->device_memory()) check_rank_memory_plan_fits(plan, m->free, m->total);
  }
  DistributedGpt model(cfg, args.make_vocab_size_divisible_by, popt, grid, comms, *be);
  model.init_parameters();
  DataParallelOptimizer opt(model, popt.use_distributed_optimizer);
  if (grid.dp_size() > 1) {
    std::size_t buckets = 0;
    for (int c = 0; c < model.num_chunks(); ++c) buckets += opt.buckets(c).size();
    log::info("data parallel: {} gradient buckets{}", buckets,
              popt.overlap_grad_reduce ? ", reduced during backward (--overlap-grad-reduce)" : ", reduced after backward");
  }
  AdamWConfig hyper;
  hyper.beta1 = float(args.adam_beta1);
  hyper.beta2 = float(args.adam_beta2);
  hyper.eps = float(args.adam_eps);
  ParallelRunner runner(model, opt, hyper);
  TrainerPlacement place;
  place.dp_rank = grid.dp_rank();
  place.dp_size = grid.dp_size();
  place.world_size = grid.world_size();
  place.logs = logs;
  Trainer trainer(args, cfg, runner, std::move(data), vocab.eod_token, place);
  return trainer.run();
}

}  // namespace gptrain::parallel
