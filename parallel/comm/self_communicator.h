// The communicator of a group of one: what a single process (pretrain_gpt without a launcher) uses for
// every group of its world-of-one grid, so the one training path runs unchanged without MPI. Reductions
// and broadcasts leave the data as it is; reduce_scatter, all_gather and all_to_all copy the rank's own
// block (through the staging backend when the buffers are device memory). There are no peers:
// point-to-point calls are errors.
#pragma once

#include "parallel/comm/communicator.h"

#include <memory>
#include <string>

namespace gptrain::parallel {

std::unique_ptr<Communicator> make_self_communicator(const std::string& name, const CommOptions& opts);

}  // namespace gptrain::parallel
