#include "parallel/comm/nccl_reduce.h"

#include "kernels/common/dtype_math.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace gptrain::parallel {
namespace {

template <typename T>
struct Plain {
  static __device__ T add(T a, T b) { return a + b; }
  static __device__ T max(T a, T b) { return b > a ? b : a; }
};
// bf16 as 16-bit patterns: every step rounded to bf16, the same bits as the host reduction.
struct Bf16 {
  static __device__ uint16_t add(uint16_t a, uint16_t b) { return bf16_add(a, b); }
  static __device__ uint16_t max(uint16_t a, uint16_t b) { return bf16_max(a, b); }
};

template <typename T, typename Ops>
__global__ void reduce_blocks_kernel(T* out, const T* blocks, int n, std::size_t count, bool is_sum) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    T acc = blocks[i];
    for (int b = 1; b < n; ++b) {  // fixed order: block 0, 1, 2, ...
      const T x = blocks[static_cast<std::size_t>(b) * count + i];
      acc = is_sum ? Ops::add(acc, x) : Ops::max(acc, x);
    }
    out[i] = acc;
  }
}

template <typename T, typename Ops = Plain<T>>
const char* launch(void* out, const void* blocks, int n, std::size_t count, ReduceOp op, cudaStream_t s) {
  const int threads = 256;
  const std::size_t want = (count + threads - 1) / threads;
  const int grid = static_cast<int>(want < 65535 ? (want == 0 ? 1 : want) : 65535);
  reduce_blocks_kernel<T, Ops>
      <<<grid, threads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(blocks), n, count, op == ReduceOp::Sum);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace

const char* reduce_blocks_in_order_device(void* out, const void* blocks, int n, std::size_t count, ElemType t,
                                          ReduceOp op, void* stream) {
  if (count == 0) return nullptr;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (t) {
    case ElemType::F32: return launch<float>(out, blocks, n, count, op, s);
    case ElemType::F64: return launch<double>(out, blocks, n, count, op, s);
    case ElemType::I32: return launch<int32_t>(out, blocks, n, count, op, s);
    case ElemType::I64: return launch<int64_t>(out, blocks, n, count, op, s);
    case ElemType::BF16: return launch<uint16_t, Bf16>(out, blocks, n, count, op, s);
    case ElemType::Byte:
    case ElemType::F16: break;
  }
  return "deterministic reduction over bytes or fp16: use f32, f64, i32, i64 or bf16";
}

}  // namespace gptrain::parallel
