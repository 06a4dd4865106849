// Device-side storage types of the compute dtypes and their float conversions. Kernels load act
// tensors into fp32, do their maths in fp32 and round once on store (round-to-nearest-even). dispatch_dtype turns a
// runtime DType into the storage type of a template.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"

namespace gptrain::cuda {

// The conversions are kernels/common/dtype_math.h's (bit-identical to the CPU twin, NaN payloads included).
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return bf16_to_f32(__bfloat16_as_ushort(x)); }
__device__ __forceinline__ float to_f32(__half x) { return f16_to_f32(__half_as_ushort(x)); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __ushort_as_bfloat16(f32_to_bf16(x));
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __ushort_as_half(f32_to_f16(x));
}

// f(T{}) with T the storage type of dtype t.
template <typename F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); return;
    case DType::BF16: f(__nv_bfloat16{}); return;
    case DType::F16: f(__half{}); return;
  }
}

// Grid size for a grid-stride loop over n elements: enough blocks to fill the GPU, no more.
inline unsigned grid_for(std::size_t n, int block, int max_blocks = 65535 * 4) {
  std::size_t g = (n + block - 1) / block;
  if (g > static_cast<std::size_t>(max_blocks)) g = max_blocks;
  return g == 0 ? 1u : static_cast<unsigned>(g);
}

}  // namespace gptrain::cuda
