// CPU twin of the linear layer fused with GELU (kernels/backend.h: matmul_bias_gelu_forward,
// matmul_dgelu_backward). On CPU the "fusion" is the composition itself: the GEMM through OpenBLAS, then
// the GELU twin over its output, so the values are by construction those of the unfused ops (the CPU
// backend is the reference the fused CUDA paths are checked against).
#pragma once

#include "kernels/backend.h"

namespace gptrain::cpu {

void matmul_bias_gelu_forward(float* out, float* pre_gelu, const float* inp, const float* weight, const float* bias,
                              int N, int IC, int OC, GeluKind kind);
void matmul_dgelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* inp,
                           const float* pre_gelu, const float* weight, int N, int IC, int OC, GeluKind kind);

}  // namespace gptrain::cpu
