// Startup checks of the CUDA stack, each failure with a message that says what to do: no GPU,
// compute capability below 8.0, kernels not built for this GPU, driver older than the runtime,
// cuDNN or NCCL older than what gptrain was built against. Plain C++ header (no CUDA types); defined
// in libgptrain_cuda.so (device_check_cuda.cpp, which also exports the device count behind
// kernels/backend.h's cuda_device_count).
#pragma once

#include <cstddef>
#include <string>

namespace gptrain {

struct CudaDeviceInfo {
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory = 0;
  std::size_t l2_bytes = 0;
  int driver_version = 0;  // e.g. 13000 for 13.0
  int runtime_version = 0;
  std::size_t cudnn_version = 0;    // e.g. 91900 for 9.19.0; 0 when unknown
  int nccl_version = 0;             // e.g. 22809 for 2.28.9
  bool cudnn_attention_ok = false;  // cuDNN new enough for the fused attention graph
};

// Runs every check for `device`; throws gptrain::Error with an actionable message on the first
// blocking problem (problems that only disable a fast path are logged as warnings).
CudaDeviceInfo check_cuda_device(int device = 0);

// One line: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB), driver 13.0, runtime 13.0, cuDNN 9.19.0, NCCL 2.28.9".
std::string describe(const CudaDeviceInfo& info);

}  // namespace gptrain
