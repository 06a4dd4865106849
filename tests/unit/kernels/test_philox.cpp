// The dropout RNG of kernels/dropout/philox.h: Random123's known-answer vectors, the documented
// index -> (block, word) mapping, the uniform's range and mean, and the CPU's batched generator.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kernels/dropout/dropout.h"
#include "kernels/dropout/philox.h"

using namespace gptrain;

TEST_CASE("philox4x32-10 matches Random123's known-answer vectors") {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const Philox4 r = philox4x32_10(Philox4{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) REQUIRE(r.v[i] == k.out[i]);
  }
}

TEST_CASE("philox_uniform follows the documented (seed, index) mapping") {
  const uint64_t seed = 0x0123456789abcdefull;
  const uint64_t j = (0x00000002fffffffdull << 2) + 3;  // block spans both counter words
  const Philox4 r = philox4x32_10(Philox4{{0xfffffffdu, 0x2u, 0, 0}}, 0x89abcdefu, 0x01234567u);
  REQUIRE(philox_uniform(seed, j) == static_cast<float>(r.v[3] >> 8) / 16777216.0f);
  REQUIRE(philox_uniform(seed, j - 3) == static_cast<float>(r.v[0] >> 8) / 16777216.0f);
  double sum = 0;
  float lo = 1, hi = 0;
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(7, static_cast<uint64_t>(i));
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
    sum += u;
  }
  REQUIRE(sum / n == Approx(0.5).margin(0.003));
  REQUIRE(lo < 1e-4f);
  REQUIRE(hi > 1.0f - 1e-4f);
  REQUIRE(philox_uniform(7, 5) != philox_uniform(8, 5));  // the seed matters
}

TEST_CASE("dropout_multipliers (vectorised Philox batches) equal philox_uniform at any alignment") {
  const float p = 0.4f, scale = 1.0f / 0.6f;
  for (uint64_t j0 : {0ull, 1ull, 2ull, 3ull, 255ull, 257ull, (1ull << 40) + 3}) {
    for (std::size_t count : {1u, 3u, 4u, 5u, 255u, 256u, 257u, 1000u}) {
      std::vector<float> m(count, -1.0f);
      gptrain::cpu::dropout_multipliers(m.data(), count, 99, j0, p, scale);
      for (std::size_t i = 0; i < count; ++i) {
        const float want = philox_uniform(99, j0 + i) >= p ? scale : 0.0f;
        INFO("j0=" << j0 << " count=" << count << " i=" << i);
        REQUIRE(m[i] == want);
      }
    }
  }
}
