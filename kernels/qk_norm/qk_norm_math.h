// Per-head RMSNorm of the Q and K heads of a qkv row (Megatron's --qk-layernorm), the index maths both
// twins share. A qkv row is [Q heads (NH) | K groups (NKV) | V groups (NKV)], each head HS wide; the
// normalized heads are the first NH + NKV of the row, so head j < NH takes the Q weight, the others the
// K weight. The norm itself is layernorm_math.h's RMSNorm (mean 0): xhat = x * rstd, y = xhat * gamma,
// dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * gamma.
#pragma once

#include <cstddef>

#include "kernels/common/hd.h"
#include "kernels/layernorm/layernorm_math.h"

namespace gptrain {

// Element offset of head j (0 <= j < NH + NKV) of qkv row r.
GPTRAIN_HD inline std::size_t qk_norm_qkv_offset(std::size_t r, int j, int NH, int NKV, int HS) {
  return r * std::size_t(NH + 2 * NKV) * HS + std::size_t(j) * HS;
}

// Element offset of head j of row r in the saved norm input, rows of (NH + NKV) * HS.
GPTRAIN_HD inline std::size_t qk_norm_saved_offset(std::size_t r, int j, int NH, int NKV, int HS) {
  return (r * std::size_t(NH + NKV) + std::size_t(j)) * HS;
}

}  // namespace gptrain
