// FP8 training (--fp8-format, Megatron's meaning through Transformer Engine): which layers' linear GEMMs
// quantise their operands, in which FP8 formats, and how the per-tensor scales are chosen. The GEMMs are
// those Transformer Engine runs in FP8: every transformer layer's QKV, attention output projection, fc1
// and fc2; never the embedding, the output layer or attention's batched products.
//   format e4m3:   every quantised tensor E4M3
//   format hybrid: forward tensors (input, weight) E4M3, the output gradient E5M2
//   recipe delayed:    each quantised tensor keeps an amax history of amax_history_len steps; the scale a
//                      step uses comes from it (fp8_scaling.h), the step's amax is recorded after use
//   recipe tensorwise: the scale of every quantisation comes from the tensor's own amax (current scaling)
#pragma once

#include "kernels/backend.h"

#include <string>

namespace gptrain {

enum class Fp8Recipe : uint8_t { Delayed = 0, Tensorwise = 1 };

struct Fp8Config {
  bool enabled = false;  // --fp8-format given
  bool hybrid = false;   // --fp8-format hybrid: E5M2 gradients
  Fp8Recipe recipe = Fp8Recipe::Delayed;
  int margin = 0;             // --fp8-margin: scale = (fp8 max / amax) / 2^margin (delayed)
  int amax_history_len = 1;   // --fp8-amax-history-len (delayed)
  bool amax_max = false;      // --fp8-amax-compute-algo max (else most_recent) (delayed)
  bool wgrad = true;          // false: --no-fp8-wgrad, the weight-gradient GEMM in the compute dtype (delayed)
  int bf16_layers_start = 0;  // --first-last-layers-bf16: the first / last layers stay in the compute dtype
  int bf16_layers_end = 0;

  // Whether global layer `layer` of a num_layers model runs its linear GEMMs in FP8.
  bool layer_in_fp8(int layer, int num_layers) const {
    return enabled && layer >= bf16_layers_start && layer < num_layers - bf16_layers_end;
  }
  Fp8Kind forward_kind() const { return Fp8Kind::E4M3; }
  Fp8Kind grad_kind() const { return hybrid ? Fp8Kind::E5M2 : Fp8Kind::E4M3; }
  bool delayed() const { return enabled && recipe == Fp8Recipe::Delayed; }
};

const char* fp8_recipe_name(Fp8Recipe r);  // "delayed" | "tensorwise"

// The four linear GEMMs of a layer and the three tensors each quantises: the scaling state is kept per
// (layer, GEMM, tensor), kFp8TensorsPerLayer entries per layer, index fp8_tensor_index(gemm, role).
enum class Fp8Gemm : uint8_t { Qkv = 0, Proj = 1, Fc1 = 2, Fc2 = 3 };
enum class Fp8Role : uint8_t { Input = 0, Weight = 1, OutputGrad = 2 };
constexpr int kFp8TensorsPerLayer = 12;
constexpr int fp8_tensor_index(Fp8Gemm g, Fp8Role r) { return int(g) * 3 + int(r); }

}  // namespace gptrain
