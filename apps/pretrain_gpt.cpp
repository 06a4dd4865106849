// pretrain_gpt: GPT pretraining with Megatron-LM's flags. One process (core/train/pretrain.h), or,
// when started by mpirun/srun (OMPI/PMI/SLURM rank variables set), every TP x PP x DP layout
// (parallel/train/pretrain_parallel.h). --dry-run plans without training (parallel/plan/dry_run.h).
#include "core/common/error.h"
#include "core/train/pretrain.h"
#include "parallel/plan/dry_run.h"
#include "parallel/launch/launch_env.h"
#include "parallel/train/pretrain_parallel.h"

namespace {
int body(int argc, char** argv) {
  const gptrain::TrainArgs args = gptrain::parse_train_args(argc, argv, 1);
  if (args.dry_run) return gptrain::parallel::pretrain_gpt_dry_run(args);
  return gptrain::pretrain_gpt_main(args);
}
}  // namespace

int main(int argc, char** argv) {
  if (gptrain::parallel::discover_launch_env().source == "single")
    return gptrain::run_main("pretrain_gpt", body, argc, argv);
  return gptrain::parallel::run_mpi_main("pretrain_gpt", gptrain::parallel::pretrain_gpt_parallel_main, argc, argv);
}
