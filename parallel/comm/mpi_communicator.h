// Communicator over an MPI communicator (OpenMPI). Buffers are host memory, or, when `staging` names
// a non-CPU backend, that backend's device memory, copied through host scratch around each call
// (slow, but lets several ranks of the CUDA backend share one GPU in tests).
//
// Every call is posted non-blocking and polled until done or until the timeout passes, so a dead or
// stuck peer ends in an Error naming the call and the group ("all_reduce on dp [0, 2] ... 600 s")
// instead of a hang. Polling yields the CPU, which matters when ranks outnumber cores.
#pragma once

#include "parallel/comm/communicator.h"
#include "parallel/grid/grid.h"

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
// world/tp/pp/dp/mp/embedding move the backend's memory (activations, gradients, parameters);
// embedding is null on ranks outside the first/last pipeline stage. host_*() move host memory
// (losses, norms, paths, flags); on the CPU backend they are the same communicators.
struct GridComms {
  std::unique_ptr<Communicator> world, tp, pp, dp, mp, embedding;
  std::unique_ptr<Communicator> host_world_, host_pp_, host_dp_, host_mp_, host_tp_, host_embedding_;
  Communicator& host_world() { return host_world_ ? *host_world_ : *world; }
  Communicator& host_pp() { return host_pp_ ? *host_pp_ : *pp; }
  Communicator& host_dp() { return host_dp_ ? *host_dp_ : *dp; }
  Communicator& host_mp() { return host_mp_ ? *host_mp_ : *mp; }
};
// All over MPI. opts.staging (the backend) decides where the data communicators' buffers live.
GridComms make_mpi_grid_comms(const ProcessGrid& grid, const CommOptions& opts);
// comm_backend "mpi" (as above) or "nccl": data communicators over NCCL (CUDA builds), host ones over
// MPI. The caller has bound its GPU already.
GridComms make_grid_comms(const ProcessGrid& grid, const CommOptions& opts, const std::string& comm_backend);

}  // namespace gptrain::parallel
