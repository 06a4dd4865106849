// CPU twins of the residual add, gradient scaling and the fp64 sum of squares (global grad norm).
#pragma once

#include <cstddef>

namespace gptrain::cpu {

void add(float* out, const float* a, const float* b, std::size_t n);
void add_inplace(float* dst, const float* src, std::size_t n);
void scale_inplace(float* x, float s, std::size_t n);
double sum_squares(const float* x, std::size_t n);

}  // namespace gptrain::cpu
