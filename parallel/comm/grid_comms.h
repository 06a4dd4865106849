// The communicators of one process grid, made together (every rank calls make_grid_comms collectively),
// and the options they run with, from the flags.
#pragma once

#include "core/config/parallel_args.h"
#include "parallel/comm/communicator.h"
#include "parallel/grid/grid.h"

#include <memory>
#include <string>

namespace gptrain::parallel {

// world/tp/pp/dp/mp/embedding move the backend's memory (activations, gradients, parameters); embedding
// is null on ranks outside the first/last pipeline stage. host_*() move host memory (losses, norms,
// paths, flags); where the backend's memory is host memory they are the same communicators.
struct GridComms {
  std::unique_ptr<Communicator> world, tp, pp, dp, mp, embedding;
  std::unique_ptr<Communicator> host_world_, host_pp_, host_dp_, host_mp_, host_tp_, host_embedding_;
  Communicator& host_world() { return host_world_ ? *host_world_ : *world; }
  Communicator& host_pp() { return host_pp_ ? *host_pp_ : *pp; }
  Communicator& host_dp() { return host_dp_ ? *host_dp_ : *dp; }
  Communicator& host_mp() { return host_mp_ ? *host_mp_ : *mp; }
};

// transport "mpi": every group over MPI, opts.staging (the backend) deciding where the data
// communicators' buffers live; "nccl": the data communicators over NCCL (CUDA builds; the caller has
// bound its GPU), host ones over MPI; "self": a world of one without MPI (every group is this rank).
GridComms make_grid_comms(const ProcessGrid& grid, const CommOptions& opts, const std::string& transport);

// --deterministic-mode and --distributed-timeout-minutes, buffers in `staging`'s memory.
CommOptions comm_options(const ParallelArgs& parallel, const BackendArgs& backend, Backend* staging);

// The transport of a job: "self" for a process started without a launcher (no MPI), else "nccl" or
// "mpi" for the compute backend ("cpu" | "cuda"), honouring --distributed-backend.
std::string comm_transport(const ParallelArgs& parallel, const std::string& compute_backend, bool under_mpi);

}  // namespace gptrain::parallel
