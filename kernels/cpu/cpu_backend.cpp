// CpuBackend: the fp32 reference implementation of the op interface (kernels/backend.h). Each op
// forwards to the CPU twin of the same name in the op's folder (kernels/<op>/<op>_cpu.cpp, declared in
// kernels/<op>/<op>.h); the forwarding is generated from the op list (kernels/ops.inc), so this file has
// no per-op code.
// Host memory is the "device" memory here, so the copy methods are memcpy and synchronize() has nothing
// to wait for. Threading: OpenMP everywhere (OMP_NUM_THREADS); the constructor pins OpenBLAS to one
// thread and the GEMM wrapper splits work across the OpenMP threads itself (kernels/common/cpu_parallel.h).
// make_backend("cpu", ...) (kernels/backend.cpp) is the only way in: the class is private to this file.
#include <cblas.h>

#include <cstdlib>
#include <cstring>

#include "core/common/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_block.h"
#include "kernels/dropout/dropout.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/fp8/fp8.h"
#include "kernels/gelu/gelu.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/lion/lion.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe.h"
#include "kernels/muon/muon.h"
#include "kernels/qk_norm/qk_norm.h"
#include "kernels/rope/rope.h"
#include "kernels/sgd/sgd.h"
#include "kernels/squared_relu/squared_relu.h"
#include "kernels/xent/xent.h"

namespace gptrain {
namespace {

// An op's argument as its CPU twin takes it: act tensors (void*, const void*) are fp32 here, every
// other argument passes unchanged.
float* cpu_twin_arg(void* p) { return static_cast<float*>(p); }
const float* cpu_twin_arg(const void* p) { return static_cast<const float*>(p); }
template <typename T>
T cpu_twin_arg(T v) {
  return v;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  const char* name() const override { return "cpu"; }
  DType compute_dtype() const override { return DType::F32; }
  std::optional<DeviceMemory> device_memory() const override { return std::nullopt; }
  BackendScratch scratch_bytes() const override { return {}; }  // per-call host temporaries only

  void* alloc(std::size_t bytes) override;
  void release(void* p) override;
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill_zero(void* p, std::size_t bytes) override;
  void synchronize() override {}
  void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) override;

 private:
  // The ops (kernels/ops.inc), arguments already checked by Backend: each calls its CPU twin
  // cpu::<op> with the same arguments, act tensors (void*) as the fp32 they are on this backend.
#define GPTRAIN_OP(ret, name, params, args, ...)                                \
  ret do_##name params override {                                               \
    return [](auto... a) -> ret { return cpu::name(cpu_twin_arg(a)...); } args; \
  }
#include "kernels/ops.inc"
};

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options) : Backend(options) {
  // One thread pool (OpenMP): GEMMs are split across OpenMP threads, each calling single-threaded BLAS.
  openblas_set_num_threads(1);
}

void* CpuBackend::alloc(std::size_t bytes) {
  constexpr std::size_t kAlign = 64;  // a cache line, and full AVX-512 vectors
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p == nullptr) fail("cpu backend: out of host memory allocating {} bytes", bytes);
  allocations().allocated(p, bytes);
  return p;
}

void CpuBackend::release(void* p) {
  allocations().released(p);
  std::free(p);
}

void CpuBackend::copy_to_device(void* dst, const void* host_src, std::size_t bytes) { copy(dst, host_src, bytes); }
void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) { copy(host_dst, src, bytes); }

void CpuBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::fill_zero(void* p, std::size_t bytes) {
  if (bytes != 0) std::memset(p, 0, bytes);
}

void CpuBackend::convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) {
  cpu::convert(dst, dst_t, src, src_t, n);
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gptrain
