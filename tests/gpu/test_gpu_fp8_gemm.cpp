// GPU vs CPU twin: fp8_gemm on the same FP8 bytes (every accepted pair of kinds), written and accumulated,
// with bf16 / fp16 outputs and fp32 ones, fast accumulation on and off, and amax; the CUDA limits (compute
// capability 8.9, multiples of 16, 16-byte pointers) as errors; the bias row (last case).
// Tolerance, per element: |gpu - cpu| <= acc * S + out * (|cpu| + |init|), S = |alpha sa sb| sum_k |a_k b_k|.
// Both sides form the exact products (FP8 x FP8 fits fp32) and sum them in different orders. Hopper's tensor
// cores add FP8 products with about 14 bits of mantissa, so each MMA step over 32 values of K may lose up to
// about 2^-13 of the running sum's magnitude (<= S). Promoted accumulation (fast_accum off) moves every step's
// partial into fp32: acc = 2^-12 leaves a factor 2. Fast accumulation keeps the running sum in the tensor
// core over all K / 32 = 5 steps: 5 * 2^-13 < acc = 2^-9. out is one round-to-nearest-even of the output
// dtype: 2^-8 for bf16 (half-ulp 2^-9, and the init's own rounding when accumulating), 2^-10 for fp16, 2^-22 for
// fp32 (the add of init, rounded once on each side). amax must equal max |out| of the GPU's own stored output exactly
// (the same values; max is order-free) and the CPU's within 2%.
#include <cmath>

#include "kernels/fp8/fp8_math.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

Fp8Format format_of(Fp8Kind k) { return k == Fp8Kind::E4M3 ? fp8_e4m3() : fp8_e5m2(); }

// Codes as FP8 training makes them: normal values cast with a scale that uses the format's range.
std::vector<uint8_t> codes(std::size_t n, Fp8Kind kind, uint32_t seed) {
  const std::vector<float> x = randn(n, seed, kind == Fp8Kind::E4M3 ? 60.0f : 3000.0f);
  std::vector<uint8_t> c(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = fp8_quantize(x[i], 1.0f, format_of(kind));
  return c;
}

Buf upload_bytes(Backend& b, const std::vector<uint8_t>& v) {
  Buf buf(b, v.size() + 16);
  b.copy_to_device(buf.get(), v.data(), v.size());
  b.synchronize();
  return buf;
}

const uint8_t* u8(const Buf& b) { return static_cast<const uint8_t*>(b.get()); }

}  // namespace

TEST_CASE("gpu fp8_gemm vs cpu: kinds, accumulate, bf16/fp16/fp32 outputs, fast accumulation, amax", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int M = 64, N = 96, K = 160;
  const float sa = 0.03125f, sb = 0.0078125f * 3.0f, alpha = 1.5f;
  for (DType t : {DType::BF16, DType::F16}) {
    Twins tw(t);
    const CudaDeviceInfo& dev = tw.cuda().device_info();
    if (dev.cc_major * 10 + dev.cc_minor < 89) {  // the refusal is what this GPU must show
      std::vector<uint8_t> a(std::size_t(M) * K, 0x38), b(std::size_t(N) * K, 0x38);
      Buf ga = upload_bytes(*tw.gpu, a), gb = upload_bytes(*tw.gpu, b), gs = upload_f32(*tw.gpu, {1.0f});
      Buf gout(*tw.gpu, std::size_t(M) * N * 4);
      REQUIRE_THROWS_WITH(tw.gpu->fp8_gemm(gout.get(), true, u8(ga), Fp8Kind::E4M3, gs.f(), u8(gb), Fp8Kind::E4M3,
                                           gs.f(), M, N, K, 1.0f, false, nullptr, false),
                          Catch::Contains("compute capability 8.9"));
      WARN("sm_" << dev.cc_major << dev.cc_minor << ": FP8 GEMM refused as expected, numerics not tested");
      return;
    }
    uint32_t seed = 100;
    for (const auto& [ak, bk] : {std::pair{Fp8Kind::E4M3, Fp8Kind::E4M3}, std::pair{Fp8Kind::E4M3, Fp8Kind::E5M2},
                                 std::pair{Fp8Kind::E5M2, Fp8Kind::E4M3}}) {
      const std::vector<uint8_t> a = codes(std::size_t(M) * K, ak, seed++), b = codes(std::size_t(N) * K, bk, seed++);
      std::vector<double> abs_sum(std::size_t(M) * N);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = 0;
          for (int k = 0; k < K; ++k)
            s += std::fabs(double(fp8_to_f32(a[std::size_t(i) * K + k], format_of(ak))) *
                           fp8_to_f32(b[std::size_t(j) * K + k], format_of(bk)));
          abs_sum[std::size_t(i) * N + j] = s * std::fabs(double(alpha) * sa * sb);
        }
      Buf ga = upload_bytes(*tw.gpu, a), gb = upload_bytes(*tw.gpu, b);
      Buf gsa = upload_f32(*tw.gpu, {sa}), gsb = upload_f32(*tw.gpu, {sb});
      for (bool out_fp32 : {false, true})
        for (bool accumulate : {false, true})
          for (bool fast : {false, true}) {
            const DType ot = out_fp32 ? DType::F32 : t;
            INFO("dtype " << dtype_name(t) << " out " << dtype_name(ot) << " kinds " << int(ak) << int(bk)
                          << " accumulate " << accumulate << " fast_accum " << fast);
            const std::vector<float> init = rounded(ot, randn(std::size_t(M) * N, seed++, 50.0f));
            std::vector<float> want = init;
            float want_amax = 0.5f;
            tw.cpu->fp8_gemm(want.data(), false, a.data(), ak, &sa, b.data(), bk, &sb, M, N, K, alpha, accumulate,
                             &want_amax, false);
            Buf gout = upload(*tw.gpu, ot, init), gamax = upload_f32(*tw.gpu, {0.5f});
            tw.gpu->fp8_gemm(gout.get(), out_fp32, u8(ga), ak, gsa.f(), u8(gb), bk, gsb.f(), M, N, K, alpha, accumulate,
                             gamax.f(), fast);
            const std::vector<float> got = download(*tw.gpu, ot, gout.get(), init.size());
            const double acc = fast ? std::ldexp(1.0, -9) : std::ldexp(1.0, -12);
            const double out_tol = ot == DType::F32 ? std::ldexp(1.0, -22)
                                                    : (ot == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -10));
            float max_abs = 0.5f;
            for (std::size_t i = 0; i < got.size(); ++i) {
              const double bound = acc * abs_sum[i] + out_tol * (std::fabs(want[i]) + std::fabs(init[i])) + 1e-30;
              INFO("element " << i << " gpu " << got[i] << " cpu " << want[i] << " bound " << bound);
              REQUIRE(std::fabs(double(got[i]) - want[i]) <= bound);
              max_abs = std::fmax(max_abs, std::fabs(got[i]));
            }
            const float gpu_amax = download_f32(*tw.gpu, gamax, 1)[0];
            REQUIRE(gpu_amax == max_abs);
            REQUIRE(std::fabs(gpu_amax - want_amax) <= 0.02 * want_amax);
          }
    }
  }
}

TEST_CASE("gpu fp8_gemm: the CUDA limits are errors that say what is expected", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::BF16);
  const CudaDeviceInfo& dev = tw.cuda().device_info();
  if (dev.cc_major * 10 + dev.cc_minor < 89) {
    WARN("below sm_89: covered by the refusal in the numerics case");
    return;
  }
  std::vector<uint8_t> bytes(64 * 64 + 64, 0x38);
  Buf ga = upload_bytes(*tw.gpu, bytes), gb = upload_bytes(*tw.gpu, bytes), gs = upload_f32(*tw.gpu, {1.0f});
  Buf gout(*tw.gpu, 64 * 64 * 4);
  auto call = [&](const uint8_t* a, int M, int N, int K, Fp8Kind ak, Fp8Kind bk) {
    tw.gpu->fp8_gemm(gout.get(), false, a, ak, gs.f(), u8(gb), bk, gs.f(), M, N, K, 1.0f, false, nullptr, true);
  };
  REQUIRE_THROWS_WITH(call(u8(ga), 64, 64, 40, Fp8Kind::E4M3, Fp8Kind::E4M3), Catch::Contains("multiple of 16"));
  REQUIRE_THROWS_WITH(call(u8(ga), 24, 64, 64, Fp8Kind::E4M3, Fp8Kind::E4M3), Catch::Contains("multiple of 16"));
  REQUIRE_THROWS_WITH(call(u8(ga) + 8, 64, 64, 64, Fp8Kind::E4M3, Fp8Kind::E4M3), Catch::Contains("16-byte aligned"));
  REQUIRE_THROWS_WITH(call(u8(ga), 64, 64, 64, Fp8Kind::E5M2, Fp8Kind::E5M2),
                      Catch::Contains("both operands are E5M2"));
  call(u8(ga), 64, 64, 64, Fp8Kind::E4M3, Fp8Kind::E4M3);              // the same call within the limits runs
  REQUIRE(download(*tw.gpu, DType::BF16, gout.get(), 1)[0] == 64.0f);  // 64 products of 1 * 1
}

// The bias (FP8 training's forward): in cuBLASLt's epilogue for bf16 / fp16 outputs, a separate pass for an fp32
// compute dtype; written and accumulated. Tolerance as above (promoted accumulation) plus the bias in the
// output's rounding.
TEST_CASE("gpu fp8_gemm vs cpu: the bias row, epilogue and separate pass", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int M = 32, N = 48, K = 64;
  const float sa = 0.0625f, sb = 0.01f;
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    Twins tw(t);
    const CudaDeviceInfo& dev = tw.cuda().device_info();
    if (dev.cc_major * 10 + dev.cc_minor < 89) return;  // refused: the case above shows it
    const std::vector<uint8_t> a = codes(std::size_t(M) * K, Fp8Kind::E4M3, 7),
                               b = codes(std::size_t(N) * K, Fp8Kind::E4M3, 8);
    std::vector<double> abs_sum(std::size_t(M) * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k)
          s += std::fabs(double(fp8_to_f32(a[std::size_t(i) * K + k], fp8_e4m3())) *
                         fp8_to_f32(b[std::size_t(j) * K + k], fp8_e4m3()));
        abs_sum[std::size_t(i) * N + j] = s * double(sa) * sb;
      }
    const std::vector<float> bias = rounded(t, randn(std::size_t(N), 9, 20.0f));
    Buf ga = upload_bytes(*tw.gpu, a), gb = upload_bytes(*tw.gpu, b), gbias = upload(*tw.gpu, t, bias);
    Buf gsa = upload_f32(*tw.gpu, {sa}), gsb = upload_f32(*tw.gpu, {sb});
    for (bool accumulate : {false, true}) {
      INFO("dtype " << dtype_name(t) << " accumulate " << accumulate);
      const std::vector<float> init = rounded(t, randn(std::size_t(M) * N, 10, 50.0f));
      std::vector<float> want = init;
      tw.cpu->fp8_gemm(want.data(), false, a.data(), Fp8Kind::E4M3, &sa, b.data(), Fp8Kind::E4M3, &sb, M, N, K, 1.0f,
                       accumulate, nullptr, false, bias.data());
      Buf gout = upload(*tw.gpu, t, init);
      tw.gpu->fp8_gemm(gout.get(), false, u8(ga), Fp8Kind::E4M3, gsa.f(), u8(gb), Fp8Kind::E4M3, gsb.f(), M, N, K, 1.0f,
                       accumulate, nullptr, false, gbias.get());
      const std::vector<float> got = download(*tw.gpu, t, gout.get(), init.size());
      const double out_tol =
          t == DType::F32 ? std::ldexp(1.0, -22) : (t == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -10));
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double bound = std::ldexp(1.0, -12) * abs_sum[i] +
                             out_tol * (std::fabs(want[i]) + std::fabs(init[i]) + std::fabs(bias[i % N])) + 1e-30;
        INFO("element " << i << " gpu " << got[i] << " cpu " << want[i] << " bound " << bound);
        REQUIRE(std::fabs(double(got[i]) - want[i]) <= bound);
      }
    }
  }
}
