// Helpers for the GPU tests: every CUDA op is compared with its CPU twin (make_backend("cpu", F32))
// on fresh random inputs. Inputs are rounded to the compute dtype first and the CPU twin runs in fp32
// on those rounded values, so the comparison measures the kernel, not the input rounding.
// Every TEST_CASE starts with GPTRAIN_REQUIRE_GPU(): without a device it prints "GPTRAIN_SKIP: ..."
// (ctest turns that into a skipped test, see CMakeLists.txt) and returns.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_check.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace gptrain::gputest {

using test::randn;
using test::rel_err;

inline bool no_gpu() {
  if (cuda_device_count() > 0) return false;
  std::printf("GPTRAIN_SKIP: no CUDA device (cudaGetDeviceCount failed or returned 0): skipped\n");
  std::fflush(stdout);
  return true;
}

#define GPTRAIN_REQUIRE_GPU()           \
  do {                                  \
    if (::gptrain::gputest::no_gpu()) { \
      WARN("no CUDA device: skipped");  \
      return;                           \
    }                                   \
  } while (0)

// Tolerance of the ||gpu - cpu|| / ||cpu|| comparison by compute dtype (fp32 1e-5, bf16 1e-2).
inline double tol(DType t) { return t == DType::F32 ? 1e-5 : (t == DType::BF16 ? 1e-2 : 2e-3); }

inline float round_to(DType t, float x) {
  switch (t) {
    case DType::F32: return x;
    case DType::BF16: return bf16_to_f32(f32_to_bf16(x));
    case DType::F16: return f16_to_f32(f32_to_f16(x));
  }
  return x;
}

inline std::vector<float> rounded(DType t, std::vector<float> v) {
  for (float& x : v) x = round_to(t, x);
  return v;
}

// One buffer in one backend's memory, freed with the object.
class Buf {
 public:
  Buf(Backend& b, std::size_t bytes) : b_(&b), p_(b.alloc(bytes)), bytes_(bytes) {}
  ~Buf() {
    if (p_) b_->release(p_);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  Buf(Buf&& o) noexcept : b_(o.b_), p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  void* get() const { return p_; }
  float* f() const { return static_cast<float*>(p_); }
  int32_t* i() const { return static_cast<int32_t*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  Backend* b_;
  void* p_;
  std::size_t bytes_;
};

// Host fp32 values -> a buffer of dtype t in backend b (converted on the host).
inline Buf upload(Backend& b, DType t, const std::vector<float>& v) {
  Buf buf(b, v.size() * dtype_size(t) + 16);
  std::vector<unsigned char> raw(v.size() * dtype_size(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(raw.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = t == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      std::memcpy(raw.data() + 2 * i, &h, 2);
    }
  }
  b.copy_to_device(buf.get(), raw.data(), raw.size());
  b.synchronize();
  return buf;
}

inline Buf upload_f32(Backend& b, const std::vector<float>& v) { return upload(b, DType::F32, v); }

inline Buf upload_i32(Backend& b, const std::vector<int32_t>& v) {
  Buf buf(b, v.size() * 4 + 16);
  b.copy_to_device(buf.get(), v.data(), v.size() * 4);
  b.synchronize();
  return buf;
}

inline std::vector<float> download(Backend& b, DType t, const void* p, std::size_t n) {
  std::vector<unsigned char> raw(n * dtype_size(t));
  b.synchronize();
  b.copy_to_host(raw.data(), p, raw.size());
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&v[i], raw.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      v[i] = t == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  return v;
}

inline std::vector<float> download_f32(Backend& b, const Buf& buf, std::size_t n) {
  return download(b, DType::F32, buf.get(), n);
}

inline std::vector<unsigned char> bytes_of(Backend& b, const Buf& buf, std::size_t n) {
  std::vector<unsigned char> raw(n);
  b.synchronize();
  b.copy_to_host(raw.data(), buf.get(), n);
  return raw;
}

// The two backends of one comparison.
struct Twins {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> gpu;
  DType t;
  explicit Twins(DType dtype) : cpu(make_backend("cpu", DType::F32)), gpu(make_backend("cuda", dtype)), t(dtype) {}
  cuda::CudaBackend& cuda() { return static_cast<cuda::CudaBackend&>(*gpu); }
};

inline const char* name_of(DType t) { return dtype_name(t); }

#define GPTRAIN_CHECK_CLOSE(what, got, ref, tolerance)                                                    \
  do {                                                                                                    \
    const double gptrain_err_ = ::gptrain::gputest::rel_err(got, ref);                                    \
    INFO(what << ": ||gpu - cpu|| / ||cpu|| = " << gptrain_err_ << " (tolerance " << (tolerance) << ")"); \
    CHECK(gptrain_err_ <= (tolerance));                                                                   \
  } while (0)

}  // namespace gptrain::gputest
