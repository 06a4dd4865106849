// Builds without CUDA: NCCL cannot exist; asking for it is a user error with a clear message.
#include "parallel/comm/nccl_communicator.h"

#include "core/common/error.h"

namespace gptrain::parallel {

std::unique_ptr<Communicator> make_nccl_group(Communicator& mpi_group, const CommOptions&, void*) {
  fail(
      "NCCL communicator requested for group {}, but this gptrain was built without CUDA "
      "(rebuild with -DGPTRAIN_CUDA=ON, or use --distributed-backend mpi)",
      mpi_group.name());
}

bool nccl_available() { return false; }

}  // namespace gptrain::parallel
