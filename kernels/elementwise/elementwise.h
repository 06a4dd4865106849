// Elementwise ops (kernels/backend.h): dtype conversion, residual add, fp32 scaling and the fp64 sum of
// squares behind the global gradient norm. Design: the sum of squares is deterministic on both twins,
// fixed 64K-element chunks summed in a fixed order whatever the thread or block count, and a
// non-finite element propagates to the result (the fp16 overflow check).
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cpu {

// Through fp32: widen each source element, narrow it to the destination (kernels/common/dtype_math.h);
// equal dtypes are a plain copy.
void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n);
void add(float* out, const float* a, const float* b, std::size_t n);
void add_inplace(float* dst, const float* src, std::size_t n);
void scale_inplace(float* x, float s, std::size_t n);
double sum_squares(const float* x, std::size_t n);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// elementwise.cu
void convert(cudaStream_t s, void* dst, DType dst_t, const void* src, DType src_t, std::size_t n);
void add(cudaStream_t s, DType t, void* out, const void* a, const void* b, std::size_t n);
void scale_f32(cudaStream_t s, float* x, float scale, std::size_t n);
// Sum of squares in fp64, two fixed-order passes (deterministic); synchronizes to return the value.
double sum_squares(cudaStream_t s, Workspace& ws, const float* x, std::size_t n);
// Its scratch: one fp64 partial per block of kSumSquaresChunk elements, and the fp64 total.
inline constexpr std::size_t kSumSquaresChunk = std::size_t(1) << 16;
constexpr std::size_t sum_squares_scratch_bytes(std::size_t n) {
  return carve_bytes<double>(ceil_div(n, kSumSquaresChunk)) + carve_bytes<double>(1);
}

}  // namespace gptrain::cuda
