// The vectorisable exp/erf of kernels/common/cpu_exp.h used by the CPU softmax, xent and GELU loops.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/common/cpu_exp.h"

using gptrain::cpu::erf_simd;
using gptrain::cpu::exp_simd;

TEST_CASE("exp_simd: relative error below 3e-7 over the float range, 0 below -87") {
  double worst = 0;
  for (double x = -86.9; x < 88.0; x += 0.000731) {
    const float xf = static_cast<float>(x);
    const double ref = std::exp(static_cast<double>(xf));
    worst = std::fmax(worst, std::fabs(exp_simd(xf) - ref) / ref);
  }
  INFO("worst relative error " << worst);
  REQUIRE(worst < 3e-7);
  REQUIRE(exp_simd(0.0f) == 1.0f);
  REQUIRE(exp_simd(-88.0f) == 0.0f);
  REQUIRE(exp_simd(-INFINITY) == 0.0f);
}

TEST_CASE("erf_simd: absolute error below 6e-7, odd, saturates at +-1") {
  double worst = 0;
  for (double x = -6.0; x < 6.0; x += 0.0001) {
    const float xf = static_cast<float>(x);
    worst = std::fmax(worst, std::fabs(erf_simd(xf) - std::erf(static_cast<double>(xf))));
  }
  INFO("worst absolute error " << worst);
  REQUIRE(worst < 6e-7);
  REQUIRE(erf_simd(-1.5f) == -erf_simd(1.5f));
  REQUIRE(erf_simd(10.0f) == 1.0f);
}
