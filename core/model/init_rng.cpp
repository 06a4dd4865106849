#include "core/model/init_rng.h"

#include "core/common/splitmix64.h"

#include <algorithm>
#include <cmath>

namespace gptrain {

namespace {

// Uniform in (0, 1]: 53 random bits, never 0 (log in Box-Muller).
double uniform01(uint64_t bits) { return (double((bits >> 11) + 1)) * 0x1.0p-53; }

}  // namespace

uint64_t init_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the name
  for (char ch : name) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
  return splitmix64(splitmix64(seed) ^ h);
}

double init_normal(uint64_t key, uint64_t index) {
  // Elements 2p and 2p+1 are the cos and sin outputs of one Box-Muller pair.
  const uint64_t pair = index >> 1;
  const double u1 = uniform01(splitmix64(key ^ splitmix64(2 * pair)));
  const double u2 = uniform01(splitmix64(key ^ splitmix64(2 * pair + 1)));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 6.283185307179586 * u2;
  return (index & 1) ? r * std::sin(a) : r * std::cos(a);
}

double init_uniform(uint64_t key, uint64_t index) {
  // A stream apart from init_normal's counters (odd salt), mapped from (0, 1] to (-1, 1].
  return 2.0 * uniform01(splitmix64(key ^ splitmix64(index) ^ 0x9e3779b97f4a7c15ull)) - 1.0;
}

void init_param_values(const ParamTensor& t, uint64_t seed, float* out) {
  const int64_t n = int64_t(t.numel);
  if (t.init == InitKind::Zeros || t.init == InitKind::Ones) {
    std::fill(out, out + n, t.init == InitKind::Ones ? 1.0f : 0.0f);
    return;
  }
  const uint64_t key = init_key(seed, t.name);
  if (t.init == InitKind::Uniform) {
    const double a = t.init_bound;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = float(a * init_uniform(key, uint64_t(local_to_global_index(t, i))));
    return;
  }
  const double std = t.init_std;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = float(std * init_normal(key, uint64_t(local_to_global_index(t, i))));
}

}  // namespace gptrain
