// The FP8 linear of a transformer layer (fp8_config.h): the layer's linear GEMMs call linear_forward /
// linear_backward, which run the plain matmul ops in layers that are not in FP8 and the FP8 path in the
// others. The FP8 path quantises each operand with its scale (delayed or current scaling) and, in a
// training forward or backward, records its amax into its history's running slot.
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
// quantised operands pass through.
struct Fp8StageState {
  const Fp8Config* config = nullptr;
  float* state = nullptr;         // device
  float* amax_scratch = nullptr;  // one float: current scaling's amax pass
  uint8_t* bytes = nullptr;       // the FP8 codes of one operand
  void* input_q = nullptr;        // (N, max IC): the dequantised input (compute dtype)
  void* weight_q = nullptr;       // (max OC * IC)
  void* grad_q = nullptr;         // (N, max OC)
  // Bytes of each buffer for a stage (0 without FP8); the memory plan counts them.
  struct Sizes {
    std::size_t state = 0, bytes = 0, input_q = 0, weight_q = 0, grad_q = 0;
    std::size_t total() const { return state + bytes + input_q + weight_q + grad_q; }
  };
  static Sizes sizes_for(DType compute, const StageConfig& c, const LocalSizes& s);
};

// out (N, OC) = inp (N, IC) W^T + b, as Backend::matmul_forward; `train` records amaxes.
void linear_forward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* out, const void* inp,
                    const void* w, const void* b, int N, int IC, int OC);
// As Backend::matmul_backward (dinp =, or += with accumulate_dinp; dw, db +=).
void linear_backward(const LayerContext& ctx, int li, Fp8Gemm gemm, bool train, void* dinp, float* dw, float* db,
                     const void* dout, const void* inp, const void* w, int N, int IC, int OC, bool accumulate_dinp);

}  // namespace gptrain
