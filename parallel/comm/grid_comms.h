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
// With context parallelism, dp is the DP x CP group (ProcessGrid::dp_cp_group: gradients, the distributed
// optimizer, loss sums) and cp the ranks that split a sequence (the K/V ring); with CP 1 cp is this rank alone.
// Expert layers (ProcessGrid's expert groups): ep exchanges tokens, expert_dp reduces expert gradients,
// expert_mp (ETP x EP x PP) sums expert gradient norms. With EP 1 they are made all the same (ep has
// one rank, expert_dp is dp's layout, expert_mp mp's).
// Hybrid sharding (--num-distributed-optimizer-instances > 1, else null): dp_intra / expert_dp_intra shard
// the distributed optimizer inside an instance, dp_inter all-reduces the shards across instances.
struct GridComms {
  std::unique_ptr<Communicator> world, tp, pp, dp, mp, embedding, ep, expert_dp, expert_mp, cp;
  std::unique_ptr<Communicator> dp_intra, expert_dp_intra, dp_inter;
  std::unique_ptr<Communicator> host_world_, host_pp_, host_dp_, host_mp_, host_tp_, host_embedding_, host_ep_,
      host_expert_dp_, host_expert_mp_, host_cp_;
  std::unique_ptr<Communicator> host_dp_intra_, host_expert_dp_intra_, host_dp_inter_;
  // The group the distributed optimizer shards over: DP (EDP for routed experts), or its instance's part.
  Communicator& dp_shard(bool expert) {
    if (expert) return expert_dp_intra ? *expert_dp_intra : *expert_dp;
    return dp_intra ? *dp_intra : *dp;
  }
  Communicator& host_world() { return host_world_ ? *host_world_ : *world; }
  Communicator& host_pp() { return host_pp_ ? *host_pp_ : *pp; }
  Communicator& host_dp() { return host_dp_ ? *host_dp_ : *dp; }
  Communicator& host_mp() { return host_mp_ ? *host_mp_ : *mp; }
  Communicator& host_cp() { return host_cp_ ? *host_cp_ : *cp; }
  Communicator& host_ep() { return host_ep_ ? *host_ep_ : *ep; }
  Communicator& host_expert_dp() { return host_expert_dp_ ? *host_expert_dp_ : *expert_dp; }
  Communicator& host_expert_mp() { return host_expert_mp_ ? *host_expert_mp_ : *expert_mp; }
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
