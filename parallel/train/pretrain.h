// pretrain_gpt's one training path, for every launch: flags -> process grid -> backend on the local
// GPU -> communicators -> tokenizer and datasets -> the memory plan of every stage -> DistributedGpt
// (the GPT of core/model split by TP and PP) -> DataParallelOptimizer -> ParallelRunner -> the training
// loop (core/train/trainer.h). A process started without a launcher is the world of one: self
// communicators, one model chunk, no transfers; under mpirun/srun the ranks form the TP x PP x DP grid.
// Megatron prints the log lines from the last rank; rank 0 builds the dataset index cache.
#pragma once

#include "parallel/launch/launch_env.h"

namespace gptrain::parallel {

// Who this process is in its job. mpi: MPI is initialised (mpirun/srun); otherwise a world of one.
struct ProcessPlace {
  int rank = 0;
  int world_size = 1;
  LaunchEnv launch;
  bool mpi = false;
};

// Parses the flags (--help / --list-flags print and return 0), routes --dry-run to parallel/plan, else
// trains. Returns the exit code.
int pretrain_gpt(const ProcessPlace& place, int argc, char** argv);

}  // namespace gptrain::parallel
