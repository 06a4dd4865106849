// make_nccl_group on the CPU side: the NCCL communicator lives in libgptrain_nccl.so, loaded on first use.
#include "core/common/plugin.h"
#include "parallel/comm/nccl_communicator.h"

namespace gptrain::parallel {

std::unique_ptr<Communicator> make_nccl_group(Communicator& mpi_group, const CommOptions& opts, void* stream) {
  auto* make = plugin::function<decltype(gptrain_nccl_make_group)>("gptrain_nccl", "gptrain_nccl_make_group",
                                                                   "NCCL communicators (--distributed-backend nccl)");
  return std::unique_ptr<Communicator>(make(&mpi_group, &opts, stream));
}

}  // namespace gptrain::parallel
