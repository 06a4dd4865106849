// Linear + GELU on CPU: pre = x W^T + b (sgemm), out = gelu(pre); backward dpre = gelu'(pre) * (dy W)
// with the GELU derivative applied in place on the GEMM's output. Same calls, same order as the
// unfused op sequence, hence the same bits.
#include "kernels/matmul/matmul.h"

#include <cstddef>

#include "kernels/gelu/gelu.h"

namespace gptrain::cpu {

void matmul_bias_gelu_forward(float* out, float* pre_gelu, const float* inp, const float* weight, const float* bias,
                              int N, int IC, int OC, GeluKind kind) {
  matmul_forward(pre_gelu, inp, weight, bias, N, IC, OC);
  gelu_forward(out, pre_gelu, static_cast<std::size_t>(N) * OC, kind);
}

void matmul_dgelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* inp,
                           const float* pre_gelu, const float* weight, int N, int IC, int OC, GeluKind kind) {
  matmul_backward(dpre, dweight, dbias, dout, inp, weight, N, IC, OC, false);
  gelu_backward(dpre, pre_gelu, dpre, static_cast<std::size_t>(N) * IC, kind);
}

}  // namespace gptrain::cpu
