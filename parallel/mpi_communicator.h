// Communicator over an MPI communicator (OpenMPI). Buffers are host memory, or, when `staging` names
// a non-CPU backend, that backend's device memory, copied through host scratch around each call
// (slow, but lets several ranks of the CUDA backend share one GPU in tests).
//
// Every call is posted non-blocking and polled until done or until the timeout passes, so a dead or
// stuck peer ends in an Error naming the call and the group ("all_reduce on dp [0, 2] ... 600 s")
// instead of a hang. Polling yields the CPU, which matters when ranks outnumber cores.
#pragma once

#include "parallel/communicator.h"
#include "parallel/grid.h"

#include <memory>
#include <vector>

namespace gptrain {
class Backend;
}

namespace gptrain::parallel {

struct CommOptions {
  bool deterministic = false;      // reductions summed in group-rank order (see communicator.h)
  double timeout_seconds = 600.0;  // --distributed-timeout-minutes * 60
  Backend* staging = nullptr;      // buffers live in this backend's memory (null or "cpu": host)
};

// Collective over MPI_COMM_WORLD: every rank passes its own group's world ranks (in group order) and
// receives a communicator over exactly those ranks. Groups of one kind must partition the world.
std::unique_ptr<Communicator> make_mpi_group(const std::vector<int>& world_ranks, const std::string& name,
                                             const CommOptions& opts);
std::unique_ptr<Communicator> make_mpi_world(const CommOptions& opts);

// The communicators of one process grid, made together (every rank must call this collectively).
struct GridComms {
  std::unique_ptr<Communicator> world, tp, pp, dp, mp, embedding;
};
GridComms make_mpi_grid_comms(const ProcessGrid& grid, const CommOptions& opts);

}  // namespace gptrain::parallel
