// Threading policy of the CPU twins. One thread pool: OpenMP. OpenBLAS (Debian's pthread build) is
// pinned to one thread by CpuBackend, and GEMMs are split into row or column blocks across the OpenMP threads,
// so BLAS threads never spin against OpenMP threads (2-core machines suffer badly from that).
// Reductions that feed parameter gradients are split by output column, never by row, so every sum
// is taken in the same order whatever the thread count: results are bitwise reproducible.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>

// Hot row kernels (softmax rows, GELU chunks, ...) are compiled three times, for AVX-512, AVX2+FMA and
// baseline x86-64, and the loader picks the best the CPU has: the library stays portable while the
// default build flags (SSE2 only) would leave most of the vector width unused. Results may differ in
// the last bits between CPU generations (FMA contraction), never between runs on one machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GPTRAIN_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GPTRAIN_CPU_CLONES
#endif

namespace gptrain::cpu {

// Number of threads worth using for `work` units when one thread should get at least `grain`.
inline int threads_for(std::size_t work, std::size_t grain) {
  if (omp_in_parallel()) return 1;
  const std::size_t by_work = std::max<std::size_t>(1, work / std::max<std::size_t>(1, grain));
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(omp_get_max_threads()), by_work));
}

// [begin, end) of part `i` of `parts` equal splits of n, boundaries rounded to multiples of `align`.
inline void split_range(std::size_t n, int parts, int i, std::size_t align, std::size_t* begin, std::size_t* end) {
  const std::size_t chunk = ((n + parts - 1) / parts + align - 1) / align * align;
  *begin = std::min(n, chunk * i);
  *end = std::min(n, *begin + chunk);
}

}  // namespace gptrain::cpu
