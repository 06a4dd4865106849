// The FP8 linear of a transformer layer (fp8_config.h): the layer's linear GEMMs call linear_forward /
// linear_backward, which run the plain matmul ops in layers that are not in FP8 and the FP8 path in the
// others. The FP8 path quantises each operand with its scale (delayed or current scaling), in a training
// forward or backward records its amax into its history's running slot, and multiplies the codes with
// fp8_gemm; where the backend's fp8_gemm does not take a call (Backend::fp8_gemm_accepts: a GPU below sm_89,
// dimensions not multiples of 16, misaligned pointers) it dequantises them for the ordinary matmul ops.
#pragma once

#include "core/model/fp8_config.h"
#include "kernels/backend.h"

#include <cstddef>

namespace gptrain {

struct LayerContext;
struct StageConfig;
struct LocalSizes;

// What a stage holds for FP8 (GptStage owns the memory): the scaling state of its layers on the device,
// (local layers, kFp8TensorsPerLayer, fp8_state_stride) floats (fp8_scaling.h), and the scratch the
// quantised operands pass through: the FP8 codes fp8_gemm reads (K contiguous: an operand or its transpose),
// and, where the backend's fp8_gemm may refuse a call (Backend::fp8_gemm_limited), the operands dequantised
// into the compute dtype for the ordinary GEMM that then runs instead.
struct Fp8StageState {
  const Fp8Config* config = nullptr;
  float* state = nullptr;           // device
  float* amax_scratch = nullptr;    // one float: current scaling's amax pass
  uint8_t* input_codes = nullptr;   // (N, max IC): X, or X^T for the weight gradient
  uint8_t* weight_codes = nullptr;  // (max OC * IC): W, or W^T for the input gradient
  uint8_t* grad_codes = nullptr;    // (N, max OC): dY
  uint8_t* grad_codes_t = nullptr;  // (max OC, N): dY^T, beside dY's codes for the weight gradient
  void* input_q = nullptr;          // (N, max IC): the dequantised input (compute dtype); null without fallback
  void* weight_q = nullptr;         // (max OC * IC)
  void* grad_q = nullptr;           // (N, max OC)
  // Bytes of each buffer for a stage (0 without FP8; the dequantised ones 0 without fallback); the memory
  // plan counts them.
  struct Sizes {
    std::size_t state = 0, input_codes = 0, weight_codes = 0, grad_codes = 0, grad_codes_t = 0, input_q = 0,
                weight_q = 0, grad_q = 0;
    std::size_t total() const {
      return state + input_codes + weight_codes + grad_codes + grad_codes_t + input_q + weight_q + grad_q;
    }
  };
  static Sizes sizes_for(DType compute, const StageConfig& c, const LocalSizes& s, bool fallback);
};

// out (N, OC) = inp (N, IC) W^T + b, as Backend::matmul_forward; `train` records amaxes.
void linear_forward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* out, const void* inp,
                    const void* w, const void* b, int N, int IC, int OC);
// As Backend::matmul_backward (dinp =, or += with accumulate_dinp; dw, db +=).
void linear_backward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* dinp, float* dw, float* db,
                     const void* dout, const void* inp, const void* w, int N, int IC, int OC, bool accumulate_dinp);

}  // namespace gptrain
