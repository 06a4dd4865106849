// The scaling state of FP8 training (fp8_config.h) and Transformer Engine's rules for it, on the host.
// Every quantised tensor (layer, GEMM, role) owns fp8_state_stride floats:
//   [amax history (amax_history_len) | scale | scale_inv]
// history[0] collects the running step's amax (the casts max= into it); the other slots hold the amaxes
// of earlier steps. The model's state is (num_layers, kFp8TensorsPerLayer, stride), the same on every rank.
#pragma once

#include "core/model/fp8_config.h"

#include <cstddef>
#include <vector>

namespace gptrain {

inline int fp8_state_stride(const Fp8Config& c) { return c.amax_history_len + 2; }
// Largest finite value of a format: 448 (E4M3), 57344 (E5M2).
float fp8_max_value(Fp8Kind k);
// The initial state: histories zero, scales (and their inverses) one.
std::vector<float> fp8_initial_state(int num_layers, const Fp8Config& c);

// Delayed scaling, one tensor's entry after a step (Transformer Engine's fused amax-and-scale update):
// amax = history[0] (most_recent) or the max of the whole history (max); the history rolls one slot
// (slot i takes slot i+1, the last takes history[0]) and history[0] restarts at 0; the scale becomes
// (fp8_max / amax) / 2^margin, kept as it was when amax is 0 or not finite, fp32's max when it
// overflows; scale_inv = 1 / scale.
void fp8_delayed_update(float* entry, int history_len, float fp8_max, int margin, bool amax_max);
// Every tensor of `state` (all layers): forward tensors with E4M3's max, output gradients with grad_kind's.
void fp8_delayed_update_all(std::vector<float>& state, const Fp8Config& c);

// Current (tensorwise) scaling: fp8_max / amax; 1 when amax is 0 or not finite, fp32's max when it overflows.
float fp8_current_scale(float amax, float fp8_max);

}  // namespace gptrain
