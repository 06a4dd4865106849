// Who am I in a multi-process launch: rank, world size and local rank (GPU index on this node), read
// from the launcher's environment before (or without) MPI. Launchers and their variables:
//   OpenMPI mpirun : OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE
//   PMI (MPICH, Intel MPI, hydra, srun --mpi=pmi2): PMI_RANK / PMI_SIZE (+ MPI_LOCALRANKID, PMI_LOCAL_RANK)
//   SLURM srun     : SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_STEP_TASKS_PER_NODE (or
//                    SLURM_NTASKS_PER_NODE) at SLURM_NODEID
//   torchrun-style : RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE (gptrain bootstraps with MPI, so a
//                    job started this way stops with the mpirun/srun command to use instead)
// The first launcher whose rank and size variables are both set wins, in that order; none = one process.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace gptrain::parallel {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;  // processes on this node (1 when the launcher does not say)
  std::string source;  // "openmpi" | "pmi" | "slurm" | "torchrun" | "single"
};

// getenv-like lookup; injectable so tests need not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();

// Throws Error when a variable is present but not a number, or values are inconsistent (rank >= size).
LaunchEnv discover_launch_env(const EnvLookup& env = process_env());

// The GPU a process drives, from its local rank and the GPUs it sees. Launchers run one process per GPU
// and name it by the local rank; a launcher that pins each process to its own GPU (one entry in
// CUDA_VISIBLE_DEVICES, e.g. srun --gpus-per-task=1) leaves every process seeing device 0. When a node
// runs more processes than it has visible GPUs they share them round-robin (local rank mod GPUs): the
// MPI-staged communicators allow that (tests run several ranks on one GPU), NCCL does not.
struct LocalDevice {
  int index = 0;
  bool shared = false;  // another process of this node uses the same GPU
};
// visible_devices >= 1 (throws otherwise, naming the local rank).
LocalDevice choose_local_device(const LaunchEnv& env, int visible_devices);

}  // namespace gptrain::parallel
