// RoPE frequency and position scaling: a plain struct so it travels by value into the rope op and the CUDA
// kernel. Three independent parts, each off by default (then every angle is plain RoPE's):
//   - Llama 3.1 / 3.2 frequency scaling ("llama3" rope_scaling of Hugging Face, Megatron's --use-rope-scaling);
//   - linear position interpolation (Megatron's --rotary-seq-len-interpolation-factor, Hugging Face's
//     rope_type "linear"): positions divided by a factor;
//   - YaRN (Megatron's --position-embedding-type yarn): per-pair blend of plain and factor-divided
//     frequencies, and cos / sin multiplied by a concentration factor.
// The maths: rope_math.h.
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
  // Positions are multiplied by fp32(1 / this) before they meet the frequencies (1: unchanged).
  double seq_len_interpolation_factor = 1.0;
  // YaRN, with Megatron's defaults (--rotary-scaling-factor, --yarn-*, --mscale, --mscale-all-dim).
  bool yarn = false;
  double yarn_factor = 1.0;                // interpolated frequencies are divided by this
  int yarn_original_max_positions = 4096;  // the context length the frequencies were first trained for
  double yarn_beta_fast = 32.0;            // pairs turning more than this often over it keep their frequency
  double yarn_beta_slow = 1.0;             // pairs turning less than this often are fully interpolated
  bool yarn_round_to_int = true;           // the blend's pair range rounded outwards to whole pairs
  double yarn_mscale = 1.0, yarn_mscale_all_dim = 0.0;  // the concentration factor's two coefficients
};

}  // namespace gptrain
