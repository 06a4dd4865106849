#include "parallel/launch/preflight.h"

#include "core/common/error.h"
#include "kernels/backend.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace gptrain::parallel {

PreflightResult allreduce_preflight(Communicator& comm, Backend* device, std::size_t bytes, int iters) {
  check(iters >= 1, "preflight: iterations must be >= 1, got {}", iters);
  const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
  std::vector<float> host(n, static_cast<float>(comm.rank() + 1));
  float* buf = host.data();
  if (device != nullptr) {
    buf = static_cast<float*>(device->alloc(n * sizeof(float)));
    device->copy_to_device(buf, host.data(), n * sizeof(float));
  }
  // First call checks the result (small integers: exact in fp32) and warms up the transport.
  comm.all_reduce(buf, n, ElemType::F32, ReduceOp::Sum);
  if (device != nullptr) device->copy_to_host(host.data(), buf, n * sizeof(float));
  const float want = static_cast<float>(comm.size()) * static_cast<float>(comm.size() + 1) / 2.0f;
  const bool ok_here = std::all_of(host.begin(), host.end(), [&](float x) { return x == want; });
  // The communicator takes buffers in its own memory space, so the verdict travels there too.
  int32_t ok = ok_here ? 1 : 0;
  if (device != nullptr) {
    void* d = device->alloc(sizeof(ok));
    device->copy_to_device(d, &ok, sizeof(ok));
    comm.all_reduce(d, 1, ElemType::I32, ReduceOp::Sum);
    device->copy_to_host(&ok, d, sizeof(ok));
    device->release(d);
  } else {
    comm.all_reduce(&ok, 1, ElemType::I32, ReduceOp::Sum);
  }
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.all_reduce(buf, n, ElemType::F32, ReduceOp::Sum);
  if (device != nullptr) device->synchronize();
  const double dt =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(iters);
  if (device != nullptr) device->release(buf);
  PreflightResult r;
  r.bytes = n * sizeof(float);
  r.iters = iters;
  r.seconds_per_iter = dt;
  r.algbw_gb_s = static_cast<double>(r.bytes) / dt / 1e9;
  const int s = comm.size();
  r.busbw_gb_s = s > 1 ? r.algbw_gb_s * 2.0 * (s - 1) / s : 0.0;
  r.correct = ok == comm.size();
  return r;
}

}  // namespace gptrain::parallel
