// CPU twins of LayerNorm and RMSNorm (maths in layernorm_math.h).
#pragma once

namespace gptrain::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps);
void layernorm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps);
void rmsnorm_backward(float* dinp_acc, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C);
// residual_out = a + b, norm_out = norm(residual_out) (kernels/backend.h); residual_out may alias a or b.
void residual_layernorm_forward(float* residual_out, float* norm_out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int N, int C, float eps);
void residual_rmsnorm_forward(float* residual_out, float* norm_out, float* rstd, const float* a, const float* b,
                              const float* weight, int N, int C, float eps);

}  // namespace gptrain::cpu
