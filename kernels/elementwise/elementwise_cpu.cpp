// Elementwise helpers on CPU. sum_squares splits x into fixed 64K-element chunks (independent of the
// thread count), sums each chunk in double and adds the chunk sums in order: the grad norm is the same
// bits on 1 or 16 threads, and a non-finite element propagates to the result (inf or NaN).
#include "kernels/elementwise/elementwise.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/cpu_parallel.h"
#include "kernels/common/dtype_math.h"

namespace gptrain::cpu {

constexpr std::size_t kGrain = 1 << 15;

void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) {
  const long long m = static_cast<long long>(n);
  const int nt = threads_for(n, 1 << 16);
  if (dst_t == src_t) {
    const std::size_t bytes = n * dtype_size(dst_t);
    if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
    return;
  }
  // through fp32: widen the source element, then narrow to the destination
  auto load = [&](long long i) -> float {
    switch (src_t) {
      case DType::F32: return static_cast<const float*>(src)[i];
      case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
      case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
    }
    return 0.0f;
  };
#pragma omp parallel for schedule(static) num_threads(nt)
  for (long long i = 0; i < m; ++i) {
    const float x = load(i);
    switch (dst_t) {
      case DType::F32: static_cast<float*>(dst)[i] = x; break;
      case DType::BF16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(x); break;
      case DType::F16: static_cast<uint16_t*>(dst)[i] = f32_to_f16(x); break;
    }
  }
}

void add(float* out, const float* a, const float* b, std::size_t n) {
  const long long m = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
  for (long long i = 0; i < m; ++i) out[i] = a[i] + b[i];
}

void add_inplace(float* dst, const float* src, std::size_t n) {
  const long long m = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
  for (long long i = 0; i < m; ++i) dst[i] += src[i];
}

void scale_inplace(float* x, float s, std::size_t n) {
  const long long m = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
  for (long long i = 0; i < m; ++i) x[i] *= s;
}

double sum_squares(const float* x, std::size_t n) {
  constexpr std::size_t kChunk = 1 << 16;
  const long long chunks = static_cast<long long>((n + kChunk - 1) / kChunk);
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, kGrain))
  for (long long k = 0; k < chunks; ++k) {
    const std::size_t b = static_cast<std::size_t>(k) * kChunk;
    const std::size_t e = std::min(n, b + kChunk);
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (std::size_t i = b; i < e; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[static_cast<std::size_t>(k)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace gptrain::cpu
