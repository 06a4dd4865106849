// Communicator over NCCL for device buffers (CUDA builds). The NCCL unique id is made by group rank 0
// and broadcast over the group's MPI communicator, so NCCL groups mirror the MPI groups one to one.
// Blocking calls are enqueued on `stream` (null: the CUDA backend's stream when opts.staging is the
// CUDA backend, so they order with its kernels) and waited for by polling, so a stuck peer ends in an
// Error (and ncclCommAbort) after the timeout. Non-blocking calls (iall_reduce, ...) run on a
// communication stream of their own that first waits for the compute stream's work issued so far.
// Deterministic mode gathers every rank's contribution and sums them in group-rank order on the GPU.
#pragma once

#include "parallel/comm/mpi_communicator.h"

#include <memory>

namespace gptrain::parallel {

// Collective over `mpi_group`'s ranks. The caller has selected its CUDA device (cudaSetDevice). Loads
// libgptrain_nccl.so on first use (nccl_group.cpp); without CUDA this throws an Error saying NCCL needs a
// CUDA build.
std::unique_ptr<Communicator> make_nccl_group(Communicator& mpi_group, const CommOptions& opts, void* stream = nullptr);

}  // namespace gptrain::parallel

// What libgptrain_nccl.so (parallel/'s *.cu and *_cuda.cpp) exports: make_nccl_group's communicator,
// owned by the caller.
extern "C" gptrain::parallel::Communicator* gptrain_nccl_make_group(gptrain::parallel::Communicator* mpi_group,
                                                                    const gptrain::parallel::CommOptions* opts,
                                                                    void* stream);
