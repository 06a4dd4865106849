// The CPU twin of fp8_gemm (kernels/fp8/fp8_gemm_cpu.cpp): against a plain double-precision loop over the
// decoded codes on random FP8 bytes of every accepted pair of kinds, written and accumulated, with amax
// (max-ed, NaN left out), the bias row, K = 0, and the refusals (E5M2 x E5M2, null scales, negative sizes, aliasing).
// The hidden case
// "[.ml_dtypes]" compares with numpy's product of ml_dtypes-decoded operands
// (tests/integration/fp8_ml_dtypes.sh runs it).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/fp8/fp8_math.h"

using namespace gptrain;

namespace {

Fp8Format format_of(Fp8Kind k) { return k == Fp8Kind::E4M3 ? fp8_e4m3() : fp8_e5m2(); }

// n random codes of finite values (NaN and inf codes redrawn).
std::vector<uint8_t> random_codes(std::size_t n, Fp8Kind kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> v(n);
  for (uint8_t& c : v) {
    do c = static_cast<uint8_t>(byte(rng));
    while (!std::isfinite(fp8_to_f32(c, format_of(kind))));
  }
  return v;
}

struct Reference {
  std::vector<double> value;    // alpha * sa * sb * sum_k a b, in double
  std::vector<double> abs_sum;  // |alpha * sa * sb| * sum_k |a b|: the scale of fp32 summation error
};

Reference reference(const std::vector<uint8_t>& a, Fp8Kind ak, float sa, const std::vector<uint8_t>& b, Fp8Kind bk,
                    float sb, int M, int N, int K, float alpha) {
  Reference r{std::vector<double>(std::size_t(M) * N), std::vector<double>(std::size_t(M) * N)};
  const double s = double(alpha) * sa * sb;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, abs_acc = 0;
      for (int k = 0; k < K; ++k) {
        const double p = double(fp8_to_f32(a[std::size_t(i) * K + k], format_of(ak))) *
                         double(fp8_to_f32(b[std::size_t(j) * K + k], format_of(bk)));
        acc += p;
        abs_acc += std::fabs(p);
      }
      r.value[std::size_t(i) * N + j] = s * acc;
      r.abs_sum[std::size_t(i) * N + j] = std::fabs(s) * abs_acc;
    }
  return r;
}

const std::pair<Fp8Kind, Fp8Kind> kPairs[] = {
    {Fp8Kind::E4M3, Fp8Kind::E4M3}, {Fp8Kind::E4M3, Fp8Kind::E5M2}, {Fp8Kind::E5M2, Fp8Kind::E4M3}};

}  // namespace

TEST_CASE("fp8_gemm on the CPU backend: the decoded product, scaled, written or accumulated, and its amax") {
  auto cpu = make_backend("cpu", DType::F32);
  const int M = 19, N = 23, K = 37;  // multiples of nothing: the CPU twin has no shape limits
  const float sa = 0.375f, sb = 2.5f, alpha = -0.75f;
  uint32_t seed = 1;
  for (const auto& [ak, bk] : kPairs) {
    INFO("a " << int(ak) << " b " << int(bk));
    const std::vector<uint8_t> a = random_codes(std::size_t(M) * K, ak, seed++);
    const std::vector<uint8_t> b = random_codes(std::size_t(N) * K, bk, seed++);
    const Reference ref = reference(a, ak, sa, b, bk, sb, M, N, K, alpha);
    std::mt19937 rng(seed++);
    std::normal_distribution<float> nd(0.0f, 100.0f);
    std::vector<float> init(std::size_t(M) * N);
    for (float& x : init) x = nd(rng);
    for (bool accumulate : {false, true}) {
      INFO("accumulate " << accumulate);
      std::vector<float> out = init;
      float amax = 0.5f;
      cpu->fp8_gemm(out.data(), false, a.data(), ak, &sa, b.data(), bk, &sb, M, N, K, alpha, accumulate, &amax, false);
      float want_amax = 0.5f;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double want = ref.value[i] + (accumulate ? init[i] : 0.0);
        // fp32 summation of K exact products, then the scaling and the add: a few units of 2^-24 per term.
        const double bound = 4.0 * K * std::ldexp(ref.abs_sum[i] + std::fabs(want), -24) + 1e-30;
        INFO("element " << i << " got " << out[i] << " want " << want);
        REQUIRE(std::fabs(out[i] - want) <= bound);
        want_amax = std::fmax(want_amax, std::fabs(out[i]));
      }
      REQUIRE(amax == want_amax);
      // out_fp32 and fast_accum select GPU paths only: the same bits here
      std::vector<float> again = init;
      cpu->fp8_gemm(again.data(), true, a.data(), ak, &sa, b.data(), bk, &sb, M, N, K, alpha, accumulate, nullptr,
                    true);
      REQUIRE(std::memcmp(again.data(), out.data(), out.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE(
    "fp8_gemm on the CPU backend: the bias row, written or accumulated, in the amax, with K = 0, refused with "
    "out_fp32") {
  auto cpu = make_backend("cpu", DType::F32);
  const int M = 7, N = 5, K = 11;
  const float sa = 0.5f, sb = 3.0f, alpha = 1.25f;
  const std::vector<uint8_t> a = random_codes(std::size_t(M) * K, Fp8Kind::E4M3, 40);
  const std::vector<uint8_t> b = random_codes(std::size_t(N) * K, Fp8Kind::E5M2, 41);
  const Reference ref = reference(a, Fp8Kind::E4M3, sa, b, Fp8Kind::E5M2, sb, M, N, K, alpha);
  const std::vector<float> bias = {1e4f, -2e4f, 3.5f, 0.0f, -7.25f};
  std::vector<float> init(std::size_t(M) * N);
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = float(i) - 10.0f;
  for (bool accumulate : {false, true}) {
    INFO("accumulate " << accumulate);
    std::vector<float> out = init;
    float amax = 0.0f;
    cpu->fp8_gemm(out.data(), false, a.data(), Fp8Kind::E4M3, &sa, b.data(), Fp8Kind::E5M2, &sb, M, N, K, alpha,
                  accumulate, &amax, false, bias.data());
    float want_amax = 0.0f;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double want = ref.value[i] + (accumulate ? init[i] : 0.0) + bias[i % N];
      const double bound = 4.0 * K * std::ldexp(ref.abs_sum[i] + std::fabs(want), -24) + 1e-30;
      INFO("element " << i << " got " << out[i] << " want " << want);
      REQUIRE(std::fabs(out[i] - want) <= bound);
      want_amax = std::fmax(want_amax, std::fabs(out[i]));
    }
    REQUIRE(amax == want_amax);
    std::vector<float> empty = init;  // K = 0: the bias alone (or added to out)
    cpu->fp8_gemm(empty.data(), false, a.data(), Fp8Kind::E4M3, &sa, b.data(), Fp8Kind::E5M2, &sb, M, N, 0, alpha,
                  accumulate, nullptr, false, bias.data());
    for (std::size_t i = 0; i < empty.size(); ++i) REQUIRE(empty[i] == (accumulate ? init[i] : 0.0f) + bias[i % N]);
  }
  std::vector<float> out(std::size_t(M) * N);
  REQUIRE_THROWS_WITH(cpu->fp8_gemm(out.data(), true, a.data(), Fp8Kind::E4M3, &sa, b.data(), Fp8Kind::E5M2, &sb, M, N,
                                    K, alpha, false, nullptr, false, bias.data()),
                      "fp8_gemm: a bias is in the compute dtype, so out must be too (out_fp32 set)");
}

TEST_CASE("fp8_gemm on the CPU backend: K = 0, NaN codes, and the refused cases") {
  auto cpu = make_backend("cpu", DType::F32);
  const float one = 1.0f;
  std::vector<float> out = {1.0f, -2.0f, 3.0f, 4.0f};
  const std::vector<uint8_t> none;
  float amax = 3.0f;
  cpu->fp8_gemm(out.data(), false, none.data(), Fp8Kind::E4M3, &one, none.data(), Fp8Kind::E4M3, &one, 2, 2, 0, 1.0f,
                true, &amax, false);
  REQUIRE(out == std::vector<float>{1.0f, -2.0f, 3.0f, 4.0f});  // an empty sum added
  REQUIRE(amax == 4.0f);
  amax = 10.0f;  // max-ed into: a larger amax stays
  cpu->fp8_gemm(out.data(), false, none.data(), Fp8Kind::E4M3, &one, none.data(), Fp8Kind::E4M3, &one, 2, 2, 0, 1.0f,
                true, &amax, false);
  REQUIRE(amax == 10.0f);
  cpu->fp8_gemm(out.data(), false, none.data(), Fp8Kind::E4M3, &one, none.data(), Fp8Kind::E4M3, &one, 2, 2, 0, 1.0f,
                false, nullptr, false);
  REQUIRE(out == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});

  // a NaN code in row 0 of a makes row 0 of out NaN; amax is of the other row
  const std::vector<uint8_t> a = {0x7f, 0x38, 0x38, 0x40};  // E4M3: NaN, 1, 1, 2
  const std::vector<uint8_t> b = {0x38, 0x38, 0x40, 0x38};  // E4M3: 1, 1, 2, 1
  amax = 0.0f;
  cpu->fp8_gemm(out.data(), false, a.data(), Fp8Kind::E4M3, &one, b.data(), Fp8Kind::E4M3, &one, 2, 2, 2, 1.0f, false,
                &amax, false);
  REQUIRE((std::isnan(out[0]) && std::isnan(out[1])));
  REQUIRE(out[2] == 3.0f);  // 1*1 + 2*1
  REQUIRE(out[3] == 4.0f);  // 1*2 + 2*1
  REQUIRE(amax == 4.0f);

  REQUIRE_THROWS_WITH(cpu->fp8_gemm(out.data(), false, a.data(), Fp8Kind::E5M2, &one, b.data(), Fp8Kind::E5M2, &one, 2,
                                    2, 2, 1.0f, false, nullptr, false),
                      Catch::Contains("fp8_gemm: both operands are E5M2"));
  REQUIRE_THROWS_WITH(cpu->fp8_gemm(out.data(), false, a.data(), Fp8Kind::E4M3, nullptr, b.data(), Fp8Kind::E4M3, &one,
                                    2, 2, 2, 1.0f, false, nullptr, false),
                      Catch::Contains("a_scale_inv and b_scale_inv must not be null"));
  REQUIRE_THROWS_WITH(cpu->fp8_gemm(out.data(), false, a.data(), Fp8Kind::E4M3, &one, b.data(), Fp8Kind::E4M3, &one, -2,
                                    2, 2, 1.0f, false, nullptr, false),
                      Catch::Contains("M=-2 must not be negative"));
  std::vector<uint8_t> buf(64, 0x38);
  REQUIRE_THROWS_WITH(cpu->fp8_gemm(buf.data(), false, buf.data(), Fp8Kind::E4M3, &one, b.data(), Fp8Kind::E4M3, &one,
                                    2, 2, 2, 1.0f, false, nullptr, false),
                      Catch::Contains("fp8_gemm: out must not alias a or b"));
}

// numpy's float64 product of ml_dtypes-decoded operands (tests/python/fp8_ml_dtypes_ref.py writes
// gemm_params.txt: "M N K alpha a_scale_inv b_scale_inv", then per pair of kinds gemm_<a>_<b>_{a,b}.u8 and
// the expected gemm_<a>_<b>_out.f64).
TEST_CASE("fp8_gemm agrees with numpy on ml_dtypes-decoded operands", "[.ml_dtypes]") {
  const char* dir = std::getenv("GPTRAIN_FP8_REFERENCE");
  REQUIRE(dir != nullptr);
  auto read_all = [&](const std::string& name) {
    std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
    REQUIRE(in.good());
    return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::vector<char> params = read_all("gemm_params.txt");
  std::istringstream ps(std::string(params.begin(), params.end()));
  int M = 0, N = 0, K = 0;
  float alpha = 0, sa = 0, sb = 0;
  ps >> M >> N >> K >> alpha >> sa >> sb;
  REQUIRE(M * N * K > 0);
  auto cpu = make_backend("cpu", DType::F32);
  for (const auto& [ak, bk] : kPairs) {
    const std::string tag =
        std::string(ak == Fp8Kind::E4M3 ? "e4m3" : "e5m2") + "_" + (bk == Fp8Kind::E4M3 ? "e4m3" : "e5m2");
    INFO(tag);
    const std::vector<char> ra = read_all("gemm_" + tag + "_a.u8"), rb = read_all("gemm_" + tag + "_b.u8");
    const std::vector<char> rout = read_all("gemm_" + tag + "_out.f64");
    REQUIRE(ra.size() == std::size_t(M) * K);
    REQUIRE(rb.size() == std::size_t(N) * K);
    REQUIRE(rout.size() == std::size_t(M) * N * 8);
    const std::vector<uint8_t> a(ra.begin(), ra.end()), b(rb.begin(), rb.end());
    std::vector<double> want(std::size_t(M) * N);
    std::memcpy(want.data(), rout.data(), rout.size());
    const Reference ref = reference(a, ak, sa, b, bk, sb, M, N, K, alpha);  // for the error scale only
    std::vector<float> out(want.size());
    cpu->fp8_gemm(out.data(), false, a.data(), ak, &sa, b.data(), bk, &sb, M, N, K, alpha, false, nullptr, false);
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("element " << i << " got " << out[i] << " want " << want[i]);
      REQUIRE(std::fabs(out[i] - want[i]) <= 4.0 * K * std::ldexp(ref.abs_sum[i], -24) + 1e-30);
    }
  }
}
