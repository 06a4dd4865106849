// Delayed FP8 scaling's update (core/model/fp8_scaling.h) in the cases a training run rarely reaches: an amax of
// 0 or infinity keeps the scale, a tiny amax clamps the scale to fp32's max, the history rolls with the running
// slot restarting at 0, and current scaling's 0 / infinite amax gives scale 1.
#include "core/model/fp8_scaling.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace gptrain;

TEST_CASE("fp8 delayed update: roll, max and most_recent, margin") {
  // history 3: [running 2, older 5, oldest 1 ...] -> rolled [0, 1, 2]
  std::vector<float> e = {2.0f, 5.0f, 1.0f, 1.0f, 1.0f};
  fp8_delayed_update(e.data(), 3, 448.0f, 1, /*amax_max=*/true);
  CHECK(e[0] == 0.0f);
  CHECK(e[1] == 1.0f);
  CHECK(e[2] == 2.0f);
  CHECK(e[3] == (448.0f / 5.0f) / 2.0f);  // the max over the old history (5), margin 1
  CHECK(e[4] == 1.0f / e[3]);
  std::vector<float> r = {2.0f, 5.0f, 1.0f, 1.0f, 1.0f};
  fp8_delayed_update(r.data(), 3, 57344.0f, 0, /*amax_max=*/false);
  CHECK(r[3] == 57344.0f / 2.0f);  // the running step's amax
}

TEST_CASE("fp8 delayed update: amax 0 or non-finite keeps the scale, overflow clamps to the fp32 max") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float amax : {0.0f, inf}) {
    std::vector<float> e = {amax, 3.0f, 0.5f};  // history 1, scale 3
    fp8_delayed_update(e.data(), 1, 448.0f, 0, false);
    CHECK(e[0] == 0.0f);
    CHECK(e[1] == 3.0f);
    CHECK(e[2] == 1.0f / 3.0f);
  }
  std::vector<float> tiny = {1e-45f, 1.0f, 1.0f};  // 448 / 1e-45 overflows fp32
  fp8_delayed_update(tiny.data(), 1, 448.0f, 0, false);
  CHECK(tiny[1] == std::numeric_limits<float>::max());
}

TEST_CASE("fp8 current scaling: scale from the tensor's own amax") {
  CHECK(fp8_current_scale(2.0f, 448.0f) == 224.0f);
  CHECK(fp8_current_scale(0.0f, 448.0f) == 1.0f);
  CHECK(fp8_current_scale(std::numeric_limits<float>::infinity(), 448.0f) == 1.0f);
  CHECK(fp8_current_scale(1e-45f, 448.0f) == std::numeric_limits<float>::max());
}

TEST_CASE("fp8 initial state: histories 0, scales 1") {
  Fp8Config c;
  c.amax_history_len = 2;
  const std::vector<float> s = fp8_initial_state(2, c);
  REQUIRE(s.size() == std::size_t(2 * kFp8TensorsPerLayer * 4));
  for (std::size_t t = 0; t < s.size(); t += 4) {
    CHECK(s[t] == 0.0f);
    CHECK(s[t + 1] == 0.0f);
    CHECK(s[t + 2] == 1.0f);
    CHECK(s[t + 3] == 1.0f);
  }
}
