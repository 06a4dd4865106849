#include "kernels/cuda/device_check.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>
#include <nccl.h>

#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda_plugin.h"
#include "kernels/cuda/probe.h"

namespace gptrain {

namespace {

// cuDNN 9.x provides the SDPA forward/backward graph engines used by the fast attention path.
constexpr std::size_t kMinCudnnForAttention = 90000;
// NCCL 2.18 is the oldest release with the communicator split and the error reporting parallel/ uses.
constexpr int kMinNccl = 21800;

std::string version_str(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

CudaDeviceInfo check_cuda_device(int device) {
  CudaDeviceInfo info;
  info.device = device;
  cudaDriverGetVersion(&info.driver_version);  // 0 when no driver is installed
  cudaRuntimeGetVersion(&info.runtime_version);

  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (info.driver_version == 0) {  // no libcuda at all (cudaGetDeviceCount then says "insufficient driver")
    cudaGetLastError();
    fail(
        "no NVIDIA driver found (cudaDriverGetVersion reports none): install the NVIDIA driver and check "
        "`nvidia-smi`, or train on the CPU with --device cpu");
  }
  if (err == cudaErrorInsufficientDriver ||
      (info.driver_version < info.runtime_version && info.driver_version / 1000 < info.runtime_version / 1000)) {
    cudaGetLastError();
    fail(
        "CUDA driver too old: the driver supports CUDA {} but gptrain was built with CUDA runtime {}; "
        "install an NVIDIA driver for CUDA {} or newer (nvidia-smi shows the driver's CUDA version), or rebuild "
        "gptrain with a CUDA toolkit the driver supports",
        version_str(info.driver_version), version_str(info.runtime_version), version_str(info.runtime_version));
  }
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    fail(
        "no CUDA GPU visible (driver CUDA {}): check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or train on the CPU "
        "with --device cpu",
        version_str(info.driver_version));
  }
  if (err != cudaSuccess) {
    fail("CUDA initialisation failed: {} ({}); check `nvidia-smi`, or train on the CPU with --device cpu",
         cudaGetErrorString(err), cudaGetErrorName(err));
  }
  if (device < 0 || device >= count) {
    fail("CUDA device {} requested but only {} visible (ids 0..{}); check CUDA_VISIBLE_DEVICES and the local rank",
         device, count, count - 1);
  }
  if (info.driver_version < info.runtime_version) {
    log::warn(
        "CUDA driver supports CUDA {} but the runtime is {}: running through minor-version compatibility; "
        "update the driver if kernels fail to load",
        version_str(info.driver_version), version_str(info.runtime_version));
  }

  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) fail("cudaGetDeviceProperties({}) failed: {}", device, cudaGetErrorString(err));
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.total_memory = prop.totalGlobalMem;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  if (prop.major < 8) {
    fail(
        "GPU {} '{}' has compute capability {}.{}; gptrain's CUDA backend needs 8.0 or newer (A100, RTX 30xx, "
        "H100, ...) for bf16 tensor cores; train on the CPU with --device cpu",
        device, prop.name, prop.major, prop.minor);
  }
  err = cudaSetDevice(device);
  if (err != cudaSuccess) fail("cudaSetDevice({}) failed: {}", device, cudaGetErrorString(err));
  err = cuda::probe_kernel_image();
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction) {
    cudaGetLastError();
    fail(
        "this gptrain build has no kernels for GPU '{}' (sm_{}{}): reconfigure with "
        "-DGPTRAIN_CUDA_ARCHS={}{} and rebuild (scripts/gpu_check.sh does this automatically)",
        prop.name, prop.major, prop.minor, prop.major, prop.minor);
  }
  if (err != cudaSuccess) fail("CUDA kernel probe failed on device {}: {}", device, cudaGetErrorString(err));

  info.cudnn_version = cudnnGetVersion();
  if (info.cudnn_version / 10000 != CUDNN_MAJOR) {
    fail(
        "cuDNN major version mismatch: loaded libcudnn {} but gptrain was built against cuDNN {}.{}; put the "
        "matching libcudnn.so.{} first on LD_LIBRARY_PATH",
        info.cudnn_version, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_MAJOR);
  }
  info.cudnn_attention_ok = info.cudnn_version >= kMinCudnnForAttention;
  if (!info.cudnn_attention_ok) {
    log::warn(
        "cuDNN {} is older than 9.0: the cuDNN fused attention path is unavailable, using the flash-attention "
        "kernels (--attention-backend flash)",
        info.cudnn_version);
  }

  ncclResult_t nr = ncclGetVersion(&info.nccl_version);
  if (nr != ncclSuccess) {
    fail("ncclGetVersion failed ({}): check that libnccl.so.2 is installed and on LD_LIBRARY_PATH",
         ncclGetErrorString(nr));
  }
  if (info.nccl_version < kMinNccl) {
    fail(
        "NCCL {} is too old: gptrain needs NCCL 2.18 or newer for multi-GPU runs; install a newer libnccl2 or put "
        "it first on LD_LIBRARY_PATH",
        info.nccl_version);
  }
  return info;
}

std::string describe(const CudaDeviceInfo& i) {
  return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB), driver CUDA {}, runtime {}, cuDNN {}.{}.{}, NCCL {}.{}.{}",
                     i.name, i.cc_major, i.cc_minor, i.sm_count, static_cast<double>(i.total_memory) / (1u << 30),
                     version_str(i.driver_version), version_str(i.runtime_version), i.cudnn_version / 10000,
                     (i.cudnn_version % 10000) / 100, i.cudnn_version % 100, i.nccl_version / 10000,
                     (i.nccl_version % 10000) / 100, i.nccl_version % 100);
}

}  // namespace gptrain

int gptrain_cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls are not confused
    return 0;
  }
  return n;
}
