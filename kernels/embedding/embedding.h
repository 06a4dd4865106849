// Token (+ learned position) embedding, vocab-parallel ready (kernels/backend.h, embedding_forward/
// backward): wte holds rows [vocab_start, vocab_start + V_local) of the vocabulary and tokens outside
// that range contribute zero, so the tensor-parallel wrapper sums over ranks.
// Design: the forward is a row gather. The backward is a scatter-add where tokens repeat, made
// deterministic without atomics on both twins: the CPU splits the channels across threads and walks
// the tokens in order; CUDA stably sorts the rows by token (CUB radix sort) and sums each token's rows
// in row order, the CPU's order (fp32 results are bit-identical).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte, const float* wpe,
                       int N, int C, int vocab_start, int V_local, float scale);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                        int N, int C, int vocab_start, int V_local, float scale);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// embedding.cu
void embedding_forward(cudaStream_t s, DType t, void* out, const int32_t* tokens, const int32_t* positions,
                       const void* wte, const void* wpe, int N, int C, int vocab_start, int V_local, float scale);
// Deterministic: rows are stably sorted by token (CUB radix sort), then each distinct token's rows are
// summed in row order by one block.
void embedding_backward(cudaStream_t s, DType t, Workspace& ws, float* dwte, float* dwpe, const void* dout,
                        const int32_t* tokens, const int32_t* positions, int N, int C, int vocab_start, int V_local,
                        float scale);
// Its scratch, requested once per table (wte, then wpe): int32 keys and values of the N rows, in and out
// of the sort, and the sort's temporary storage (sort_temp_bytes, which CUB reports at run time).
constexpr std::size_t embedding_backward_scratch_bytes(std::size_t N, std::size_t sort_temp_bytes) {
  return 4 * carve_bytes<int32_t>(N) + carve_bytes<char>(sort_temp_bytes);
}
// An upper bound of that sort's temporary storage, cub::DeviceRadixSort::SortPairs of N int32 keys and
// values with separate in/out arrays (CUDA 12/13, onesweep): alternate key and value buffers (2 x 4N),
// lookback (one 256-digit int row per tile; tiles hold >= 256 items, so <= 4 (N + 255)), and 1 MiB for
// bins, counters, alignment and the non-onesweep path's spine. For estimates made before any GPU runs.
constexpr std::size_t embedding_sort_temp_bytes_bound(std::size_t N) {
  return 2 * 4 * N + 4 * (N + 255) + (std::size_t(1) << 20);
}

}  // namespace gptrain::cuda
