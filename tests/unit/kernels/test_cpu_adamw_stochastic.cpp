// AdamW on bf16 parameters without a master copy, rounded stochastically (--bf16-stochastic-rounding):
// unbiased where round-to-nearest stalls, one of the two bf16 neighbours of the fp32 step, the bits a pure
// function of (seed, step, tensor, global index) however a range is split, bf16 and fp32-held parameters
// alike; and dumped for the numpy reference adamw_stochastic_ref.py.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/adamw/adamw.h"
#include "kernels/adamw/adamw_math.h"
#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

std::vector<float> bf16_values(std::vector<float> x) {
  for (float& e : x) e = bf16_to_f32(f32_to_bf16(e));
  return x;
}

// The next bf16 value above and below x (a bf16 value, finite, not zero).
float bf16_step(float x, int dir) {
  uint16_t h = f32_to_bf16(x);
  const bool up_in_magnitude = (x > 0) == (dir > 0);
  h = static_cast<uint16_t>(up_in_magnitude ? h + 1 : h - 1);
  return bf16_to_f32(h);
}

}  // namespace

TEST_CASE("adamw stochastic rounding: a step round-to-nearest loses moves the mean as fp32 does") {
  auto be = cpu_backend();
  // 1.0 and lr 1e-3: each Adam step (constant gradient: mhat / sqrt(vhat) = 1) takes 1e-3 off, a quarter of
  // bf16's spacing below 1 (2^-8), so rounding to nearest gives 1.0 back every time.
  const std::size_t n = 1 << 16;
  const int steps = 10;
  const float lr = 1e-3f;
  std::vector<float> p(n, 1.0f), m(n, 0.0f), v(n, 0.0f), g(n, 1.0f);
  std::vector<float> p32(1, 1.0f), m32(1, 0.0f), v32(1, 0.0f);
  for (int s = 1; s <= steps; ++s) {
    be->adamw_update_stochastic(p.data(), g.data(), {m.data(), DType::F32, v.data(), DType::F32}, n, lr, 0.9f, 0.95f,
                                1e-8f, 0.0f, s, 1.0f, StochasticRounding{42, 7, 0, 0, n, n});
    be->adamw_update(p32.data(), nullptr, g.data(), m32.data(), v32.data(), 1, lr, 0.9f, 0.95f, 1e-8f, 0.0f, s, 1.0f);
    if (s == 1) {
      // Round to nearest stalls: the first fp32 result rounds back to 1.
      REQUIRE(bf16_to_f32(f32_to_bf16(p32[0])) == 1.0f);
      // After one step every value is 1 or the bf16 below it, the share below ~ Binomial(n, q).
      const double q = (1.0 - double(p32[0])) / std::ldexp(1.0, -8);
      std::size_t down = 0;
      for (float x : p) {
        REQUIRE((x == 1.0f || x == bf16_step(1.0f, -1)));
        down += x != 1.0f;
      }
      const double sigma = std::sqrt(q * (1 - q) / double(n));
      INFO("share rounded down " << double(down) / n << ", expected " << q << " +- " << sigma);
      REQUIRE(std::abs(double(down) / n - q) < 6 * sigma);
    }
  }
  double mean = 0;
  for (float x : p) mean += x;
  mean /= double(n);
  // Each step's rounding error has mean 0 and variance at most (spacing / 2)^2, independent across steps and
  // elements (bits keyed by step and index): the mean's standard deviation is at most sqrt(steps) * 2^-9 / sqrt(n).
  const double sigma = std::sqrt(double(steps)) * std::ldexp(1.0, -9) / std::sqrt(double(n));
  INFO("mean " << mean << ", fp32 master " << p32[0] << ", tolerance " << 6 * sigma);
  REQUIRE(std::abs(mean - double(p32[0])) < 6 * sigma);
  REQUIRE(1.0 - mean > 0.9 * steps * lr);  // it moved (round to nearest: not at all)
}

TEST_CASE("adamw stochastic rounding: neighbours of the fp32 step, keyed by global index, bf16 or fp32-held") {
  auto be = cpu_backend();
  const std::size_t n = 4099;
  const std::vector<float> p0 = bf16_values(randn(n, 501)), g = randn(n, 502, 0.1f);
  const StochasticRounding sr{0x123456789abcdef0ull, 0xdeadbeefu, 5, 1000, 7, 13};
  auto run = [&](std::vector<float>& p, int step, StochasticRounding s, std::size_t lo, std::size_t hi) {
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    be->adamw_update_stochastic(p.data() + lo, g.data() + lo, {m.data() + lo, DType::F32, v.data() + lo, DType::F32},
                                hi - lo, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 1.0f, s);
  };
  std::vector<float> whole = p0;
  run(whole, 3, sr, 0, n);
  // Every value is a bf16 next to the fp32 step's result.
  std::vector<float> p32 = p0, m32(n, 0.0f), v32(n, 0.0f);
  be->adamw_update(p32.data(), nullptr, g.data(), m32.data(), v32.data(), n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3, 1.0f);
  std::size_t rounded_up = 0, rounded_down = 0;
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(whole[i] == bf16_to_f32(f32_to_bf16(whole[i])));
    const uint32_t lo = f32_bits(p32[i]) & 0xffff0000u;
    REQUIRE((f32_bits(whole[i]) == lo || f32_bits(whole[i]) == lo + 0x10000u));
    rounded_up += f32_bits(whole[i]) != lo, rounded_down += f32_bits(whole[i]) == lo;
  }
  REQUIRE(rounded_up > n / 4);
  REQUIRE(rounded_down > n / 4);
  // Split in two calls (the second starting at `first` + 1234 of the same map): the same bits.
  std::vector<float> split = p0;
  run(split, 3, sr, 0, 1234);
  StochasticRounding rest = sr;
  rest.first += 1234;
  run(split, 3, rest, 1234, n);
  REQUIRE(std::memcmp(split.data(), whole.data(), n * 4) == 0);
  // Another step or tensor key draws other bits.
  for (auto [step, key] : {std::pair{4, sr.tensor_key}, std::pair{3, sr.tensor_key + 1}}) {
    std::vector<float> other = p0;
    StochasticRounding s = sr;
    s.tensor_key = key;
    run(other, step, s, 0, n);
    REQUIRE(std::memcmp(other.data(), whole.data(), n * 4) != 0);
  }
  // bf16 parameters (the CUDA backend's storage under --bf16) give the fp32-held values' bits.
  std::vector<uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(p0[i]);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  cpu::adamw_update_stochastic(h.data(), DType::BF16, g.data(), {m.data(), DType::F32, v.data(), DType::F32}, n, 3e-3f,
                               0.9f, 0.95f, 1e-8f, 0.1f, 3, 1.0f, sr);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(bf16_to_f32(h[i]) == whole[i]);
  // Inf and NaN round to nearest; a negative value rounds its magnitude.
  REQUIRE(f32_to_bf16_stochastic(INFINITY, 0) == f32_to_bf16(INFINITY));
  REQUIRE(std::isnan(bf16_to_f32(f32_to_bf16_stochastic(NAN, 0))));
  REQUIRE(bf16_to_f32(f32_to_bf16_stochastic(-1.0f - 0x1p-10f, 0)) == bf16_step(-1.0f, -1));
  REQUIRE(bf16_to_f32(f32_to_bf16_stochastic(-1.0f - 0x1p-10f, 0xffff)) == -1.0f);
}

// Not run by default: with GPTRAIN_ADAMW_DUMP=DIR writes a case and the kernel's results for
// tests/python/adamw_stochastic_ref.py (numpy: Philox, the index map and the rounding recomputed).
TEST_CASE("adamw stochastic rounding: dump for the numpy reference", "[.adamw_sr_dump]") {
  const char* dir = std::getenv("GPTRAIN_ADAMW_DUMP");
  REQUIRE(dir != nullptr);
  auto be = cpu_backend();
  const std::size_t n = 4099;
  auto write = [&](const std::string& name, const void* data, std::size_t bytes) {
    std::FILE* f = std::fopen((std::string(dir) + "/" + name).c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(data, 1, bytes, f) == bytes);
    std::fclose(f);
  };
  const std::vector<float> p0 = bf16_values(randn(n, 601));
  std::vector<float> m0 = randn(n, 602, 1e-3f), v0 = randn(n, 603, 3e-2f);
  for (float& x : v0) x *= x;
  write("sr_p0.f32", p0.data(), n * 4);
  write("sr_m0.f32", m0.data(), n * 4);
  write("sr_v0.f32", v0.data(), n * 4);
  std::vector<std::vector<float>> g;
  for (int s = 0; s < 3; ++s) {
    g.push_back(randn(n, 610 + s, 0.05f));
    write("sr_g" + std::to_string(s) + ".f32", g.back().data(), n * 4);
  }
  // Moments fp32, then bf16 (stored, rounded to nearest); parameters fp32-held bf16 values.
  for (const DType md : {DType::F32, DType::BF16}) {
    std::vector<float> p = p0, m = m0, v = v0;
    std::vector<uint16_t> mh(n), vh(n);
    for (std::size_t i = 0; i < n; ++i) mh[i] = f32_to_bf16(m0[i]), vh[i] = f32_to_bf16(v0[i]);
    const AdamWMoments mv =
        md == DType::BF16 ? AdamWMoments{mh.data(), md, vh.data(), md} : AdamWMoments{m.data(), md, v.data(), md};
    for (int s = 0; s < 3; ++s)
      be->adamw_update_stochastic(p.data(), g[s].data(), mv, n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1 + s, 0.5f,
                                  StochasticRounding{0x123456789abcdef0ull, 0xdeadbeefu, 5, 1000, 7, 13});
    if (md == DType::BF16)
      for (std::size_t i = 0; i < n; ++i) m[i] = bf16_to_f32(mh[i]), v[i] = bf16_to_f32(vh[i]);
    const std::string tag = md == DType::BF16 ? "bf16" : "fp32";
    write("sr_p_" + tag + ".f32", p.data(), n * 4);
    write("sr_m_" + tag + ".f32", m.data(), n * 4);
    write("sr_v_" + tag + ".f32", v.data(), n * 4);
  }
}
