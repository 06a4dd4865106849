// A build without CUDA has no CUDA backend to offload from.
#include "core/common/error.h"
#include "kernels/offload/offload_stream.h"

namespace gptrain {

std::unique_ptr<OffloadStream> make_cuda_offload_stream(Backend&, int) {
  fail("activation offloading on CUDA needs a CUDA build");
}

}  // namespace gptrain
