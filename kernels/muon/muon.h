// The Muon optimizer's device steps (kernels/backend.h: muon_momentum, muon_apply, muon_scale_round) and the
// fp32 GEMM and 2-D copy its Newton-Schulz iteration and tensor-parallel gathers use (gemm_f32,
// copy_2d_f32). Element-wise maths in muon_math.h; core/optim/newton_schulz.h composes them.
#pragma once

#include <cstddef>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

void muon_momentum(float* buf, float* u, const float* grad, std::size_t n, float grad_scale, float momentum,
                   bool nesterov);
// model_param (nullable) receives the updated master (fp32 on CPU).
void muon_apply(float* master, float* model_param, const float* o, std::size_t n, float lr, float weight_decay,
                float scale, float extra_scale);
void muon_scale_round(float* x, std::size_t n, float divisor, bool round_bf16);
// Row-major C (M, N) = alpha * op(A) op(B) + beta * C in fp32 (cpu::sgemm).
void gemm_f32(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b, float alpha,
              float beta);
// rows x cols block: dst[r * dst_ld + c] = src[r * src_ld + c].
void copy_2d_f32(float* dst, int dst_ld, const float* src, int src_ld, int rows, int cols);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// muon.cu; `t` is the dtype of model_param (nullable).
void muon_momentum(cudaStream_t s, float* buf, float* u, const float* grad, std::size_t n, float grad_scale,
                   float momentum, bool nesterov);
void muon_apply(cudaStream_t s, DType t, float* master, void* model_param, const float* o, std::size_t n, float lr,
                float weight_decay, float scale, float extra_scale);
void muon_scale_round(cudaStream_t s, float* x, std::size_t n, float divisor, bool round_bf16);

}  // namespace gptrain::cuda
