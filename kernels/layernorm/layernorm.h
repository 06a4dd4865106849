// LayerNorm and RMSNorm over the last dimension, and their residual-fused forwards (kernels/backend.h).
// Maths: layernorm_math.h (two-pass row statistics in fp32, no E[x^2]-E[x]^2 cancellation).
// Design: RMSNorm is LayerNorm with mean 0 and no bias on both twins, so one implementation serves
// both. Rows are independent (forward and input gradient run row-parallel: a warp per row on CUDA);
// the weight/bias gradients are column sums over all rows, reduced in a fixed order without atomics
// (deterministic). zero_centered_gamma: the weight stores gamma - 1 and the norm scales by 1 + weight
// (Megatron's --apply-layernorm-1p), in the same kernels; the weight gradient is unchanged (d gamma / d w
// = 1). The residual-fused forward adds the two residual inputs in the row pass itself
// (same bits as add + norm, one fewer trip of the residual stream through memory).
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C, float eps, bool zero_centered_gamma);
void layernorm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C,
                        bool zero_centered_gamma);
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                     bool zero_centered_gamma);
void rmsnorm_backward(float* dinp_acc, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C, bool zero_centered_gamma);
// residual_out = a + b, norm_out = norm(residual_out) (kernels/backend.h); residual_out may alias a or b.
void residual_layernorm_forward(float* residual_out, float* norm_out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int N, int C, float eps,
                                bool zero_centered_gamma);
void residual_rmsnorm_forward(float* residual_out, float* norm_out, float* rstd, const float* a, const float* b,
                              const float* weight, int N, int C, float eps, bool zero_centered_gamma);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// The backward's weight/bias gradients: blocks sum tiles of kNormTileRows rows into fp32 partials, one
// (tiles, C) array for the weight and one for the bias (requested for RMSNorm too), from the Workspace.
inline constexpr int kNormTileRows = 128;
constexpr std::size_t norm_backward_scratch_bytes(std::size_t N, std::size_t C) {
  return 2 * carve_bytes<float>(ceil_div(N, kNormTileRows) * C);
}

// layernorm.cu
void layernorm_forward(cudaStream_t s, DType t, void* out, float* mean, float* rstd, const void* inp,
                       const void* weight, const void* bias, int N, int C, float eps, bool zero_centered_gamma);
void layernorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, float* dbias,
                        const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd,
                        int N, int C, bool zero_centered_gamma);
void rmsnorm_forward(cudaStream_t s, DType t, void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                     float eps, bool zero_centered_gamma);
void rmsnorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, const void* dout,
                      const void* inp, const void* weight, const float* rstd, int N, int C, bool zero_centered_gamma);
// residual_out = a + b and its norm in one kernel (same bits as add + the plain forward).
void residual_layernorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* mean, float* rstd,
                                const void* a, const void* b, const void* weight, const void* bias, int N, int C,
                                float eps, bool zero_centered_gamma);
void residual_rmsnorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* rstd, const void* a,
                              const void* b, const void* weight, int N, int C, float eps, bool zero_centered_gamma);

}  // namespace gptrain::cuda
