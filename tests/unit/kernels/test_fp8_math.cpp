// fp32 <-> E4M3 / E5M2 of kernels/fp8/fp8_math.h (shared with the CUDA twins): every code decodes to
// the value its fields define and encodes back to itself, and narrowing agrees with an independent
// reference (the nearest of all finite codes, searched in double, ties to the even code) on every
// midpoint between neighbouring codes and 600,000 random floats, saturating and not; the CPU twin of the
// fp8_cast_transpose / fp8_dequantize ops (codes, transpose, amax without NaN). The hidden case
// "[.ml_dtypes]" compares with ml_dtypes' casts (tests/integration/fp8_ml_dtypes.sh runs it).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/fp8/fp8_math.h"

using namespace gptrain;

namespace {

struct Named {
  const char* name;
  Fp8Format fmt;
  int exponent_bits;
};
const Named kFormats[] = {{"e4m3", fp8_e4m3(), 4}, {"e5m2", fp8_e5m2(), 5}};

// The value of a magnitude code from its fields alone (NaN / inf codes excluded by the caller).
double field_value(uint32_t mag, const Fp8Format& fmt) {
  const int e = static_cast<int>(mag >> fmt.mantissa_bits);
  const double m = static_cast<double>(mag & ((1u << fmt.mantissa_bits) - 1u)) / (1 << fmt.mantissa_bits);
  if (e == 0) return std::ldexp(m, 1 - fmt.exponent_bias);
  return std::ldexp(1.0 + m, e - fmt.exponent_bias);
}

// Reference narrowing: nearest finite magnitude code in double, ties to the even code; beyond the largest
// finite value, the overflow rule (a value at least half an ulp above it overflows, a tie only if the
// largest code is odd, as round-to-nearest-even past the end of the range does).
uint8_t ref_fp8(float f, const Fp8Format& fmt, bool saturate) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | fmt.nan);
  const double a = std::fabs(static_cast<double>(f));
  const double max = field_value(fmt.max_finite, fmt);
  const double half_ulp = std::ldexp(1.0, static_cast<int>(std::ilogb(max)) - fmt.mantissa_bits - 1);
  const uint8_t over = saturate ? fmt.max_finite : fmt.overflow;
  if (a > max + half_ulp || (a == max + half_ulp && (fmt.max_finite & 1u))) return static_cast<uint8_t>(sign | over);
  uint32_t best = 0;
  double best_d = a;
  for (uint32_t c = 1; c <= fmt.max_finite; ++c) {
    const double d = std::fabs(field_value(c, fmt) - a);
    if (d < best_d || (d == best_d && (c & 1u) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

void check_against_reference(float f, const Named& n) {
  for (bool saturate : {false, true}) {
    const uint8_t got = fp8_from_f32(f, n.fmt, saturate);
    const uint8_t want = ref_fp8(f, n.fmt, saturate);
    INFO(n.name << " f=" << f << " saturate=" << saturate);
    if (std::isnan(f)) {
      REQUIRE(fp8_is_nan(got, n.fmt));
      continue;
    }
    REQUIRE(int(got) == int(want));
  }
}

}  // namespace

TEST_CASE("every FP8 code decodes to its fields' value and encodes back to itself") {
  for (const Named& n : kFormats) {
    int nans = 0, infs = 0;
    for (uint32_t c = 0; c < 256; ++c) {
      const uint8_t b = static_cast<uint8_t>(c);
      const float f = fp8_to_f32(b, n.fmt);
      INFO(n.name << " code " << c);
      if (fp8_is_nan(b, n.fmt)) {
        ++nans;
        REQUIRE(std::isnan(f));
        REQUIRE(fp8_is_nan(fp8_from_f32(f, n.fmt, false), n.fmt));
        continue;
      }
      if (std::isinf(f)) {
        ++infs;
        REQUIRE(fp8_from_f32(f, n.fmt, false) == b);
        REQUIRE(int(fp8_from_f32(f, n.fmt, true)) == int((b & 0x80u) | n.fmt.max_finite));
        continue;
      }
      const double want = (c & 0x80u ? -1.0 : 1.0) * field_value(c & 0x7fu, n.fmt);
      REQUIRE(static_cast<double>(f) == want);
      REQUIRE(int(fp8_from_f32(f, n.fmt, false)) == int(c));
      REQUIRE(int(fp8_from_f32(f, n.fmt, true)) == int(c));
    }
    // E4M3 (fn): one NaN per sign, no inf; E5M2: three NaNs and one inf per sign
    REQUIRE(nans == (n.fmt.has_inf ? 6 : 2));
    REQUIRE(infs == (n.fmt.has_inf ? 2 : 0));
  }
  REQUIRE(fp8_to_f32(fp8_e4m3().max_finite, fp8_e4m3()) == 448.0f);
  REQUIRE(fp8_to_f32(fp8_e5m2().max_finite, fp8_e5m2()) == 57344.0f);
  REQUIRE(fp8_to_f32(1, fp8_e4m3()) == std::ldexp(1.0f, -9));
  REQUIRE(fp8_to_f32(1, fp8_e5m2()) == std::ldexp(1.0f, -16));
}

TEST_CASE("fp32 -> FP8 rounds to nearest even on every midpoint, past the range and at random") {
  for (const Named& n : kFormats) {
    // midpoints between neighbouring codes (ties), and one float either side of them
    for (uint32_t c = 0; c <= n.fmt.max_finite; ++c) {
      const double lo = field_value(c, n.fmt);
      const double hi = c < n.fmt.max_finite
                            ? field_value(c + 1, n.fmt)
                            : lo + std::ldexp(1.0, static_cast<int>(std::ilogb(lo)) - n.fmt.mantissa_bits);
      const float mid = static_cast<float>((lo + hi) / 2);
      for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
        check_against_reference(f, n);
        check_against_reference(-f, n);
      }
    }
    for (float f : {0.0f, -0.0f, 1e-30f, 1e-45f, 3.0e38f, INFINITY, -INFINITY, NAN, 464.0f, 464.1f, 61440.0f, 61439.9f})
      check_against_reference(f, n);
    std::mt19937 rng(2026);
    for (int i = 0; i < 300000; ++i) {
      float f = f32_from_bits(static_cast<uint32_t>(rng()));
      if (i % 2)  // the range FP8 represents, densely
        f = std::ldexp(static_cast<float>(rng() % 65536) / 32768.0f - 1.0f, static_cast<int>(rng() % 40) - 22);
      check_against_reference(f, n);
    }
  }
}

TEST_CASE("scaled FP8 quantisation saturates and reads back through scale_inv") {
  const Fp8Format e4 = fp8_e4m3();
  // 960 * (1/4) = 240 is on the E4M3 grid (step 16 in [128, 256)), so it reads back exactly; 1000 * (1/4) = 250
  // is not and rounds to 256, read back as 1024
  REQUIRE(fp8_dequantize(fp8_quantize(960.0f, 0.25f, e4), 4.0f, e4) == 960.0f);
  REQUIRE(fp8_dequantize(fp8_quantize(1000.0f, 0.25f, e4), 4.0f, e4) == 1024.0f);
  // 1e6 * 0.25 overflows: the saturating cast gives 448, read back as 1792
  REQUIRE(fp8_dequantize(fp8_quantize(1e6f, 0.25f, e4), 4.0f, e4) == 1792.0f);
  REQUIRE(fp8_dequantize(fp8_quantize(-INFINITY, 1.0f, e4), 1.0f, e4) == -448.0f);
}

// Agreement with ml_dtypes (float8_e4m3fn, float8_e5m2: non-saturating round-to-nearest-even casts): the
// directory in GPTRAIN_FP8_REFERENCE holds inputs.f32 and ml_dtypes' e4m3.u8 / e5m2.u8 for them.
TEST_CASE("FP8 casts agree with ml_dtypes bit for bit", "[.ml_dtypes]") {
  const char* dir = std::getenv("GPTRAIN_FP8_REFERENCE");
  REQUIRE(dir != nullptr);
  auto read_all = [&](const std::string& name) {
    std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
    REQUIRE(in.good());
    return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::vector<char> raw = read_all("inputs.f32");
  const size_t count = raw.size() / 4;
  std::vector<float> inputs(count);
  std::memcpy(inputs.data(), raw.data(), count * 4);
  const std::vector<char> want4 = read_all("e4m3.u8"), want5 = read_all("e5m2.u8");
  REQUIRE(want4.size() == count);
  REQUIRE(want5.size() == count);
  size_t nan_inputs = 0;
  for (size_t i = 0; i < count; ++i) {
    const float f = inputs[i];
    const uint8_t w4 = static_cast<uint8_t>(want4[i]), w5 = static_cast<uint8_t>(want5[i]);
    INFO("input " << i << " = " << f);
    if (std::isnan(f)) {  // NaN payloads differ between libraries; NaN-ness and the sign must not
      ++nan_inputs;
      REQUIRE(fp8_is_nan(fp8_from_f32(f, fp8_e4m3(), false), fp8_e4m3()));
      REQUIRE(fp8_is_nan(fp8_from_f32(f, fp8_e5m2(), false), fp8_e5m2()));
      continue;
    }
    REQUIRE(int(fp8_from_f32(f, fp8_e4m3(), false)) == int(w4));
    REQUIRE(int(fp8_from_f32(f, fp8_e5m2(), false)) == int(w5));
  }
  REQUIRE(count > 1000000);
  // and every code widens to ml_dtypes' float
  for (const auto& [name, fmt] :
       {std::pair{std::string("e4m3"), fp8_e4m3()}, std::pair{std::string("e5m2"), fp8_e5m2()}}) {
    const std::vector<char> dec = read_all("decode_" + name + ".f32");
    REQUIRE(dec.size() == 256 * 4);
    for (uint32_t c = 0; c < 256; ++c) {
      float want;
      std::memcpy(&want, dec.data() + 4 * c, 4);
      const float got = fp8_to_f32(static_cast<uint8_t>(c), fmt);
      INFO(name << " code " << c);
      if (std::isnan(want)) {
        REQUIRE(std::isnan(got));
        continue;
      }
      REQUIRE(f32_bits(got) == f32_bits(want));
    }
  }
  REQUIRE(nan_inputs < count / 100);
}

TEST_CASE("fp8_cast_transpose and fp8_dequantize on the CPU backend") {
  auto cpu = make_backend("cpu", DType::F32);
  const int R = 37, C = 19;  // not multiples of any tile
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(std::size_t(R) * C);
  for (float& v : x) v = nd(rng);
  x[5] = -1e6f;  // saturates
  x[6] = NAN;    // left out of amax
  for (Fp8Kind kind : {Fp8Kind::E4M3, Fp8Kind::E5M2}) {
    const Fp8Format fmt = kind == Fp8Kind::E4M3 ? fp8_e4m3() : fp8_e5m2();
    const float scale = 37.5f, scale_inv = 1.0f / scale;
    std::vector<uint8_t> out(x.size()), out_t(x.size());
    float amax = 2.0f;  // max-ed into: stays when the tensor's amax is smaller
    cpu->fp8_cast_transpose(out.data(), out_t.data(), &amax, x.data(), &scale, R, C, kind);
    REQUIRE(amax == 1e6f);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        const uint8_t want = fp8_from_f32(x[std::size_t(r) * C + c] * scale, fmt, true);
        REQUIRE(int(out[std::size_t(r) * C + c]) == int(want));
        REQUIRE(int(out_t[std::size_t(c) * R + r]) == int(want));
      }
    REQUIRE(int(out[5]) == int(0x80 | fmt.max_finite));
    std::vector<uint8_t> only_t(x.size());
    cpu->fp8_cast_transpose(nullptr, only_t.data(), nullptr, x.data(), &scale, R, C, kind);
    REQUIRE(only_t == out_t);
    std::vector<float> back(x.size());
    cpu->fp8_dequantize(back.data(), out.data(), &scale_inv, x.size(), kind);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) continue;
      const float want = fp8_to_f32(out[i], fmt) * scale_inv;
      REQUIRE(back[i] == want);
      if (i != 5)
        REQUIRE(std::fabs(back[i] - x[i]) <= std::fabs(x[i]) * (kind == Fp8Kind::E4M3 ? 0.0625f : 0.125f) + 1e-6f);
    }
  }
  REQUIRE_THROWS(cpu->fp8_cast_transpose(nullptr, nullptr, nullptr, x.data(), &x[0], R, C, Fp8Kind::E4M3));
}
