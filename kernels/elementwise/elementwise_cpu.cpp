// Elementwise helpers on CPU. sum_squares splits x into fixed 64K-element chunks (independent of the
// thread count), sums each chunk in double and adds the chunk sums in order: the grad norm is the same
// bits on 1 or 16 threads, and a non-finite element propagates to the result (inf or NaN).
#include "kernels/elementwise/elementwise_cpu.h"

#include <vector>

#include "kernels/common/cpu_parallel.h"

namespace gptrain::cpu {

constexpr std::size_t kGrain = 1 << 15;

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
