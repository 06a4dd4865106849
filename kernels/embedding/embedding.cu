// Embedding on CUDA. Forward gathers rows (coalesced over C). Backward is deterministic without
// atomics: the row indices are stably sorted by token id (CUB radix sort, which is stable), and the
// block that sees the first row of a token sums that token's rows in ascending row order into dwte,
// the same order as the CPU twin (so fp32 results are bit-identical). dwpe the same, keyed by position.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/embedding/embedding.h"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const int32_t* positions, const T* wte,
                                         const T* wpe, int N, int C, int vocab_start, int V_local, float scale) {
  const std::size_t total = std::size_t(N) * C;
  for (std::size_t idx = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::size_t(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / C), c = static_cast<int>(idx % C);
    const int local = tokens[i] - vocab_start;
    float v = (local >= 0 && local < V_local) ? to_f32(wte[std::size_t(local) * C + c]) : 0.0f;
    if (wpe) v += to_f32(wpe[std::size_t(positions[i]) * C + c]);
    out[idx] = from_f32<T>(v * scale);
  }
}

// keys[i] = local token id (or `sentinel` when the token is outside this shard), vals[i] = i.
__global__ void token_keys_kernel(int32_t* keys, int32_t* vals, const int32_t* ids, int N, int start, int limit,
                                  int sentinel) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const int local = ids[i] - start;
  keys[i] = (local >= 0 && local < limit) ? local : sentinel;
  vals[i] = i;
}

// Block p handles the run of equal keys starting at sorted position p (if one starts there).
template <typename T>
__global__ void segment_accumulate_kernel(float* dw, const T* dout, const int32_t* keys, const int32_t* rows, int N,
                                          int C, int sentinel, float scale) {
  const int p = blockIdx.x;
  const int key = keys[p];
  if (key == sentinel || (p > 0 && keys[p - 1] == key)) return;
  int end = p + 1;
  while (end < N && keys[end] == key) ++end;
  float* w = dw + std::size_t(key) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = w[c];
    for (int q = p; q < end; ++q) acc += scale * to_f32(dout[std::size_t(rows[q]) * C + c]);
    w[c] = acc;
  }
}

int bits_for(int max_value) {
  int bits = 1;
  while (bits < 31 && (1 << bits) <= max_value) ++bits;
  return bits;
}

template <typename T>
void scatter_rows(cudaStream_t s, Workspace& ws, float* dw, const T* dout, const int32_t* ids, int N, int C, int start,
                  int limit, int sentinel, int end_bit, float scale) {
  std::size_t temp_bytes = 0;
  GPTRAIN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), N, 0, end_bit, s));
  Carver c(ws.get(embedding_backward_scratch_bytes(N, temp_bytes)));
  int32_t* keys_in = c.take<int32_t>(N);
  int32_t* vals_in = c.take<int32_t>(N);
  int32_t* keys_out = c.take<int32_t>(N);
  int32_t* vals_out = c.take<int32_t>(N);
  void* temp = c.take<char>(temp_bytes);
  token_keys_kernel<<<(N + 255) / 256, 256, 0, s>>>(keys_in, vals_in, ids, N, start, limit, sentinel);
  GPTRAIN_CUDA_CHECK_LAUNCH();
  GPTRAIN_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, N, 0, end_bit, s));
  segment_accumulate_kernel<T><<<N, 128, 0, s>>>(dw, dout, keys_out, vals_out, N, C, sentinel, scale);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void embedding_forward(cudaStream_t s, DType t, void* out, const int32_t* tokens, const int32_t* positions,
                       const void* wte, const void* wpe, int N, int C, int vocab_start, int V_local, float scale) {
  if (N == 0 || C == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<grid_for(std::size_t(N) * C, 256), 256, 0, s>>>(
        static_cast<T*>(out), tokens, positions, static_cast<const T*>(wte), static_cast<const T*>(wpe), N, C,
        vocab_start, V_local, scale);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void embedding_backward(cudaStream_t s, DType t, Workspace& ws, float* dwte, float* dwpe, const void* dout,
                        const int32_t* tokens, const int32_t* positions, int N, int C, int vocab_start, int V_local,
                        float scale) {
  if (N == 0 || C == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const T* d = static_cast<const T*>(dout);
    // Tokens outside [vocab_start, vocab_start + V_local) get the key V_local and are skipped.
    scatter_rows<T>(s, ws, dwte, d, tokens, N, C, vocab_start, V_local, V_local, bits_for(V_local), scale);
    // Positions are always in range: the sentinel -1 never occurs as a key.
    if (dwpe) scatter_rows<T>(s, ws, dwpe, d, positions, N, C, 0, 0x7fffffff, -1, 31, scale);
  });
}

}  // namespace gptrain::cuda
