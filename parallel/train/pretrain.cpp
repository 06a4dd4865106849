#include "parallel/train/pretrain.h"

#include "core/common/agreed_error.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/train_args.h"
#include "core/hf/family.h"
#include "core/train/checkpoint_dirs.h"
#include "core/train/exit_signal.h"
#include "core/train/setup.h"
#include "core/train/trainer.h"
#include "data/gpt_dataset/index_memory.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/launch/local_gpu.h"
#include "parallel/plan/dry_run.h"
#include "parallel/plan/expert_exchange.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/plan/offload_plan.h"
#include "parallel/plan/recompute_plan.h"
#include "parallel/train/parallel_runner.h"

#include <optional>
#include <string>

namespace gptrain::parallel {

namespace {

// With --exit-signal-handler: whether some rank has received the exit signal (collective over the world,
// so every rank stops at the same start-up point). Logs the reason on the logging rank.
bool exit_signal_in_startup(const TrainArgs& args, GridComms& comms, bool logs) {
  if (!args.training.exit_signal_handler) return false;
  int32_t any = exit_signal::received() ? 1 : 0;
  comms.host_world().all_reduce(&any, 1, ElemType::I32, ReduceOp::Max);
  if (any != 0 && logs) log::info("{}", exit_signal::startup_exit_message(args.training.exit_signal));
  return any != 0;
}

int train(const TrainArgs& args, const ProcessPlace& place) {
  ProcessGrid grid(place.world_size, place.rank, grid_sizes(args.parallel));
  const bool logs = place.rank == place.world_size - 1;  // Megatron's logging rank
  log::set_silenced(!logs && place.rank != 0);
  log::set_primary(logs);  // its iteration and validation lines match the single process's byte for byte
  if (logs)
    for (const std::string& line : args.checkpoint_args_lines) log::info("{}", line);

  const int gpu = local_gpu(args, place.launch);
  auto be = make_training_backend(args, gpu);
  const std::string transport = comm_transport(args.parallel, be->name(), place.mpi);
  GridComms comms = make_grid_comms(grid, comm_options(args.parallel, args.backend, be.get()), transport);
  log::info("pretrain_gpt: {}; {} backend ({}{}); communicators: {}", grid.describe(), be->name(),
            dtype_name(be->compute_dtype()), std::string(be->name()) == "cuda" ? fmt::format(", GPU {}", gpu) : "",
            describe(*comms.world));
  exit_signal::startup_point("comms", place.rank);
  if (exit_signal_in_startup(args, comms, logs)) return 0;

  check_save_dir(args.checkpoint);  // now, not at the first save hours later
  // One run per save directory, held for the whole run. Rank 0 (the one that commits) takes the locks; a
  // refusal stops every rank with its message.
  std::optional<SaveDirLocks> save_locks;
  std::optional<std::string> lock_error;
  if (place.rank == 0) {
    try {
      save_locks.emplace(args.checkpoint);
    } catch (const std::exception& e) {
      lock_error = e.what();
    }
  }
  if (const std::optional<std::string> e = agree_on_error(comms.host_world(), lock_error)) fail_agreed("{}", *e);
  const VocabInfo vocab = vocab_info(args);
  const StageConfig cfg = stage_config_from_args(args, vocab.vocab_size);
  check_attention_head_dim(be->name(), cfg.kv_channels, fmt::format("{} device {}", be->name(), gpu));
  if (const std::string ep =
          describe_expert_parallelism(cfg, args.parallel, grid.dp_size(), args.num_micro_batches, be->compute_dtype());
      !ep.empty())
    log::info("pretrain_gpt: {}", ep);
  BuildSync sync;
  sync.builds_cache = place.rank == 0;
  sync.barrier = [&] { comms.host_world().barrier(); };
  exit_signal::startup_point("data", place.rank);
  GPTDatasets data = training_datasets(args, vocab, sync);
  if (exit_signal_in_startup(args, comms, logs)) return 0;

  // Before anything is allocated: the logging rank prints every pipeline stage's plan, each rank
  // checks its own against its GPU.
  const int div = args.model.make_vocab_size_divisible_by;
  for (int stage = 0; stage < grid.pp_size(); ++stage) {
    if (!logs && stage != grid.pp_rank()) continue;
    const MemoryPlan plan = memory_plan(cfg, div, args.parallel, stage, grid.dp_cp_size(), args.num_micro_batches, *be);
    if (logs) log::info("pretrain_gpt: {}", format_memory_plan(plan));
    if (stage != grid.pp_rank()) continue;
    std::optional<DeviceMemory> m = be->device_memory();
    std::string host_limit;
    if (!m) {  // the CPU backend: what this process may still allocate
      check_cpu_address_space(plan, address_space_left());
      if (const std::optional<AvailableMemory> room = available_memory()) {
        m = DeviceMemory{room->bytes, room->bytes};
        host_limit = room->limit;
      }
    }
    if (m && plan.total() > m->free) {
      const std::optional<RecomputeChoice> fit = cheapest_fitting_recompute(
          recompute_choices(cfg, div, args.parallel, stage, grid.dp_cp_size(), args.num_micro_batches,
                            be->compute_dtype(), workspace_options(*be)),
          m->free);
      const std::optional<OffloadChoice> offload =
          cheapest_fitting_offload(offload_choices(cfg, div, args.parallel, stage, grid.dp_cp_size(),
                                                   args.num_micro_batches, be->compute_dtype(), workspace_options(*be)),
                                   m->free);
      check_memory_plan_fits(plan, m->free, m->total, fit ? fit->flags : std::string(),
                             offload ? offload_advice(*offload) : std::string(), host_limit);
    }
  }
  exit_signal::startup_point("model", place.rank);
  DistributedGpt model(cfg, div, args.parallel, grid, comms, *be);
  model.init_parameters();
  if (exit_signal_in_startup(args, comms, logs)) return 0;
  const OptimizerArgs& o = args.optimizer;
  AdamWHyper hyper{float(o.adam_beta1), float(o.adam_beta2), float(o.adam_eps)};
  if (args.parallel.optimizer == "sgd") hyper.rule = UpdateRule::sgd;
  // Megatron builds --optimizer lion with betas (--adam-beta1, --adam-beta2); --lion-beta1/2 are its scalar
  // optimizer's under Muon.
  if (args.parallel.optimizer == "lion") {
    hyper.rule = UpdateRule::lion;
    hyper.lion_beta1 = hyper.beta1;
    hyper.lion_beta2 = hyper.beta2;
  }
  hyper.sgd_momentum = float(o.sgd_momentum);
  hyper.rounding_seed = uint64_t(args.training.seed);
  MuonHyper muon;
  muon.momentum = float(o.muon_momentum);
  muon.nesterov = o.muon_nesterov;
  muon.split_qkv = !o.muon_no_split_qkv;
  muon.scale_mode = o.muon_scale_mode;
  muon.extra_scale = float(o.muon_extra_scale_factor);
  muon.tp_mode = o.muon_tp_mode;
  muon.ns = {o.muon_num_ns_steps, o.muon_coefficient_type, o.muon_fp32_matmul_prec == "medium"};
  DataParallelOptimizer opt(model, hyper, muon);
  log::info("pretrain_gpt: family {}, padded vocabulary {}, {}", hf::default_family(cfg), cfg.padded_vocab_size,
            opt.describe());
  ParallelRunner runner(model, opt);
  TrainerPlacement where;
  where.dp_rank = grid.dp_rank();
  where.dp_size = grid.dp_size();
  where.world_size = grid.world_size();
  where.rank = place.rank;
  where.on_gpu = std::string(be->name()) == "cuda";
  where.logs = logs;
  Trainer trainer(args, cfg, runner, std::move(data), vocab.eod_token, where);
  return trainer.run();
}

}  // namespace

int pretrain_gpt(const ProcessPlace& place, int argc, char** argv) {
  const std::optional<TrainArgs> args = parse_train_args(argc, argv, place.world_size);
  // Now that the flags are known: the exit signal (recorded since main's first line) raises the flag the
  // start-up checks and the training loop read; any other signal acts as it would have.
  exit_signal::install(args && args->training.exit_signal_handler
                           ? std::optional<int>(exit_signal::number(args->training.exit_signal))
                           : std::nullopt);
  if (!args) return 0;                                                     // --help or --list-flags printed
  if (args->dry_run) return pretrain_gpt_dry_run(*args, place.rank == 0);  // before any communicator exists
  return train(*args, place);
}

}  // namespace gptrain::parallel
