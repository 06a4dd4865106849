// pretrain_gpt on several processes (mpirun/srun): the same flags, datasets and training loop as the
// single-process pretrain_gpt_main (core/train/pretrain.cpp), with the model built as DistributedGpt
// for the TP x PP x DP layout behind ParallelRunner. Megatron prints the log lines from the last rank;
// rank 0 builds the dataset index cache for the others.
#pragma once

#include "parallel/launch/mpi_runtime.h"

namespace gptrain::parallel {

int pretrain_gpt_parallel_main(MpiRuntime& mpi, int argc, char** argv);

}  // namespace gptrain::parallel
