// The CUDA profiler backend: NVTX ranges (nvtx3, header-only) and cudaProfilerStart/Stop at the
// window's edges, for nsys's --capture-range=cudaProfilerApi.
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/metrics/profiler.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

namespace gptrain::metrics {

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  check(e == cudaSuccess, "--profile: {} failed: {}", what, cudaGetErrorString(e));
}

class NvtxProfileBackend final : public ProfileBackend {
 public:
  void push(const char* name, int index) override {
    if (index < 0) {
      nvtxRangePushA(name);
    } else {
      label_ = fmt::format("{} {}", name, index);
      nvtxRangePushA(label_.c_str());  // NVTX copies the message
    }
  }
  void pop() override { nvtxRangePop(); }
  void window_begin() override { cuda_ok(cudaProfilerStart(), "cudaProfilerStart"); }
  void window_end(const std::string& header, double) override {
    cuda_ok(cudaProfilerStop(), "cudaProfilerStop");
    log::report(fmt::format("{}: cudaProfilerStop", header));
  }
  const char* describe() const override {
    return "cudaProfilerStart/Stop and NVTX ranges: run under nsys profile --capture-range=cudaProfilerApi "
           "--capture-range-end=stop";
  }

 private:
  std::string label_;
};

}  // namespace

}  // namespace gptrain::metrics

gptrain::metrics::ProfileBackend* gptrain_cuda_make_nvtx_profile_backend() {
  return new gptrain::metrics::NvtxProfileBackend();
}
