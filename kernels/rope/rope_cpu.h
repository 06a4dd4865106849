// CPU twin of rotary position embedding (maths in rope_math.h).
#pragma once

#include <cstdint>

namespace gptrain::cpu {

void rope(float* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
          bool interleaved, bool inverse);

}  // namespace gptrain::cpu
