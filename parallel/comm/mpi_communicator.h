// Communicator over an MPI communicator (OpenMPI). Buffers are host memory, or, when `staging` names
// a non-CPU backend, that backend's device memory, copied through host scratch around each call
// (slow, but lets several ranks of the CUDA backend share one GPU in tests).
//
// Every call is posted non-blocking and polled until done or until the timeout passes, so a dead or
// stuck peer ends in an Error naming the call and the group ("all_reduce on dp [0, 2] ... 600 s")
// instead of a hang. Polling yields the CPU, which matters when ranks outnumber cores.
#pragma once

#include "parallel/comm/communicator.h"

#include <memory>
#include <vector>

namespace gptrain::parallel {

// Collective over MPI_COMM_WORLD: every rank passes its own group's world ranks (in group order) and
// receives a communicator over exactly those ranks. Groups of one kind must partition the world.
std::unique_ptr<Communicator> make_mpi_group(const std::vector<int>& world_ranks, const std::string& name,
                                             const CommOptions& opts);
std::unique_ptr<Communicator> make_mpi_world(const CommOptions& opts);

}  // namespace gptrain::parallel
