// CPU-only builds: no NVTX (the CPU backend's ranges are timed instead, profiler.h).
#include "core/common/error.h"
#include "core/metrics/profiler.h"

namespace gptrain::metrics {

std::unique_ptr<ProfileBackend> make_nvtx_profile_backend() {
  fail("--profile: NVTX ranges need a CUDA build of gptrain");
}

}  // namespace gptrain::metrics
