// pretrain_gpt: GPT pretraining with Megatron-LM's flags. One training path (parallel/train/pretrain.h)
// for a single process (started without a launcher: a world of one, no MPI) and for every TP x PP x DP
// layout under mpirun/srun (OMPI/PMI/SLURM rank variables set).
#include "core/common/error.h"
#include "core/train/exit_signal.h"
#include "parallel/launch/mpi_runtime.h"
#include "parallel/train/pretrain.h"

namespace {

int single(int argc, char** argv) {
  gptrain::parallel::ProcessPlace place;
  place.launch = gptrain::parallel::discover_launch_env();
  return gptrain::parallel::pretrain_gpt(place, argc, argv);
}

int under_mpi(gptrain::parallel::MpiRuntime& mpi, int argc, char** argv) {
  gptrain::parallel::ProcessPlace place;
  place.rank = mpi.rank();
  place.world_size = mpi.world_size();
  place.launch = mpi.launch();
  place.mpi = true;
  return gptrain::parallel::pretrain_gpt(place, argc, argv);
}

// Before MPI starts and the flags are parsed, since a scheduler's signal may come at any time
// (core/train/exit_signal.h). The test hook's and the environment's errors are reported once the app runs.
void catch_signals_from_the_start() {
  gptrain::exit_signal::catch_early();
  try {
    gptrain::exit_signal::startup_point("launch", gptrain::parallel::discover_launch_env().rank);
  } catch (const std::exception&) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  catch_signals_from_the_start();
  if (gptrain::parallel::discover_launch_env().source == "single")
    return gptrain::run_main("pretrain_gpt", single, argc, argv);
  return gptrain::parallel::run_mpi_main("pretrain_gpt", under_mpi, argc, argv);
}
