// RoPE frequency scaling of Llama 3.1 / 3.2 ("llama3" rope_scaling of Hugging Face, Megatron's
// --use-rope-scaling): a plain struct so it travels by value into the rope op and the CUDA kernel.
// Off (llama3 false) leaves every frequency as plain RoPE computes it. The maths: rope_math.h.
#pragma once

namespace gptrain {

// The factors are doubles as in the Python of Hugging Face and Megatron, which form the band limits
// in double before rounding them to fp32.
struct RopeScaling {
  bool llama3 = false;
  double factor = 8.0;                // low frequencies are divided by this
  double low_freq_factor = 1.0;       // wavelengths above original / low_freq_factor: divided by factor
  double high_freq_factor = 4.0;      // wavelengths below original / high_freq_factor: unchanged
  int original_max_positions = 8192;  // the context length the model was first trained for
};

}  // namespace gptrain
