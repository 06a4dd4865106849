// Rotary position embedding maths shared by the twins. For pair i of the rotated part (i < rotary_dim/2):
//   inv_freq_i = 1 / base^(2i / rotary_dim)       (fp32, as Hugging Face computes it)
//   angle      = position * inv_freq_i            (fp32 product)
//   (x0, x1)  -> (x0 cos - x1 sin, x0 sin + x1 cos)   forward
//   (x0, x1)  -> (x0 cos + x1 sin, -x0 sin + x1 cos)  inverse = transpose = backward of forward
// Pair members: interleaved (GPT-J): dims (2i, 2i+1); half-split (NeoX, Llama): dims (i, i + rotary_dim/2).
// Dims >= rotary_dim pass through (partial rotary, --rotary-percent).
// Llama-3 scaling (RopeScaling::llama3) replaces inv_freq_i by rope_inv_freq_llama3 below, YaRN by
// rope_inv_freq_yarn; linear interpolation replaces position by position * fp32(1 / factor) (as Megatron
// forms it; Hugging Face divides inv_freq instead, equal to a rounding); YaRN also multiplies cos and sin
// by its concentration factor m, so forward is m R and the transpose m R^T its backward (no longer its inverse).
#pragma once

#include <cmath>

#include "kernels/common/hd.h"
#include "kernels/rope/rope_scaling.h"

namespace gptrain {

GPTRAIN_HD inline float rope_inv_freq(int i, int rotary_dim, float base) {
  return 1.0f / powf(base, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
}

// Llama-3 scaling of one inverse frequency, with wavelength w = 2 pi / inv_freq and L the original
// context length: w < L / high_freq_factor keeps inv_freq, w > L / low_freq_factor divides it by factor,
// and between the two it blends inv_freq / factor and inv_freq with weight
// smooth = (L / w - low_freq_factor) / (high_freq_factor - low_freq_factor).
// Every step is one fp32 operation in the order (and with the fp32-rounded constants) Hugging Face's
// torch code uses: w = (1 / inv_freq) * 2pi, L / w = (1 / w) * L, so the frequencies match it bit for bit.
// One rounded fp32 product / sum each: nvcc would otherwise fuse a * b + c into one FMA, and the CUDA
// twin's frequencies would drift from the CPU twin's by an ulp.
GPTRAIN_HD inline float rope_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GPTRAIN_HD inline float rope_add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

GPTRAIN_HD inline float rope_inv_freq_llama3(float inv_freq, const RopeScaling& s) {
  const double L = static_cast<double>(s.original_max_positions);
  const float factor = static_cast<float>(s.factor);
  const float wavelen = rope_mul(1.0f / inv_freq, static_cast<float>(2.0 * 3.14159265358979323846));
  const float low_freq_wavelen = static_cast<float>(L / s.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(L / s.high_freq_factor);
  if (wavelen > low_freq_wavelen) return inv_freq / factor;
  if (wavelen < high_freq_wavelen) return inv_freq;
  const float smooth =
      rope_add(rope_mul(1.0f / wavelen, static_cast<float>(L)), -static_cast<float>(s.low_freq_factor)) /
      static_cast<float>(s.high_freq_factor - s.low_freq_factor);
  return rope_add(rope_mul(rope_add(1.0f, -smooth), inv_freq) / factor, rope_mul(smooth, inv_freq));
}

// YaRN's pair index (a real number) at which a frequency turns `rotations` times over the original context.
GPTRAIN_HD inline double rope_yarn_correction_dim(double rotations, int dim, double base, int original) {
  return dim * ::log(original / (rotations * 2.0 * 3.14159265358979323846)) / (2.0 * ::log(base));
}

// YaRN's inverse frequency of pair i (of dim / 2): pairs below the range [low, high] of correction dims keep
// inv_freq (extrapolation), pairs above it take inv_freq / factor (interpolation), pairs inside blend the two
// with the linear ramp (i - low) / (high - low). The range is formed in double and each step after it in fp32
// in the order Megatron's torch code uses (its interpolated frequency is 1 / (factor * base^(2i/dim))).
GPTRAIN_HD inline float rope_inv_freq_yarn(int i, int dim, float base, const RopeScaling& s) {
  const float p = powf(base, static_cast<float>(2 * i) / static_cast<float>(dim));
  const float extra = 1.0f / p;
  const float inter = 1.0f / rope_mul(static_cast<float>(s.yarn_factor), p);
  double low = rope_yarn_correction_dim(s.yarn_beta_fast, dim, base, s.yarn_original_max_positions);
  double high = rope_yarn_correction_dim(s.yarn_beta_slow, dim, base, s.yarn_original_max_positions);
  if (s.yarn_round_to_int) {
    low = floor(low);
    high = ceil(high);
  }
  low = fmax(low, 0.0);
  high = fmin(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // one pair wide: a step instead of a division by zero
  const float ramp = fminf(
      fmaxf(rope_add(static_cast<float>(i), -static_cast<float>(low)) / static_cast<float>(high - low), 0.0f), 1.0f);
  const float keep = rope_add(1.0f, -ramp);  // weight of the plain frequency
  return rope_add(rope_mul(inter, rope_add(1.0f, -keep)), rope_mul(extra, keep));
}

// YaRN's concentration factor (attention factor, "mscale"): cos and sin are multiplied by
// mscale(factor, mscale) / mscale(factor, mscale_all_dim), mscale(f, m) = 0.1 m ln f + 1 for f > 1, else 1.
// Rounded to fp32 as the torch code multiplies an fp32 cos by it. 1 without YaRN.
GPTRAIN_HD inline double rope_yarn_mscale(double factor, double m) {
  return factor <= 1.0 ? 1.0 : 0.1 * m * ::log(factor) + 1.0;
}
GPTRAIN_HD inline float rope_concentration(const RopeScaling& s) {
  if (!s.yarn) return 1.0f;
  return static_cast<float>(rope_yarn_mscale(s.yarn_factor, s.yarn_mscale) /
                            rope_yarn_mscale(s.yarn_factor, s.yarn_mscale_all_dim));
}

// The inverse frequency of pair i with the run's scaling (none: rope_inv_freq).
GPTRAIN_HD inline float rope_inv_freq(int i, int rotary_dim, float base, const RopeScaling& s) {
  if (s.yarn) return rope_inv_freq_yarn(i, rotary_dim, base, s);
  const float f = rope_inv_freq(i, rotary_dim, base);
  return s.llama3 ? rope_inv_freq_llama3(f, s) : f;
}

// The position as it meets the frequencies: Megatron's linear interpolation multiplies it by 1 / factor.
GPTRAIN_HD inline float rope_position(int pos, const RopeScaling& s) {
  return rope_mul(static_cast<float>(pos), static_cast<float>(1.0 / s.seq_len_interpolation_factor));
}

// Indices of the two dims of pair i inside a head.
GPTRAIN_HD inline void rope_pair(int i, int rotary_dim, bool interleaved, int* d0, int* d1) {
  if (interleaved) {
    *d0 = 2 * i;
    *d1 = 2 * i + 1;
  } else {
    *d0 = i;
    *d1 = i + rotary_dim / 2;
  }
}

// Rotates (x0, x1) in place; inverse uses -sin.
GPTRAIN_HD inline void rope_rotate(float* x0, float* x1, float cos_a, float sin_a, bool inverse) {
  const float s = inverse ? -sin_a : sin_a;
  const float a = *x0, b = *x1;
  *x0 = a * cos_a - b * s;
  *x1 = a * s + b * cos_a;
}

}  // namespace gptrain
