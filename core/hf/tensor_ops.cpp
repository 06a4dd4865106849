#include "core/hf/tensor_ops.h"

#include <algorithm>
#include <cstring>

namespace gptrain::hf {

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> y(x.size());
  constexpr int64_t kTile = 32;  // cache-friendly blocks
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) y[c * rows + r] = x[r * cols + c];
  return y;
}

std::vector<float> take_rows(std::vector<float> x, int64_t keep, int64_t cols) {
  x.resize(static_cast<std::size_t>(keep * cols));
  return x;
}

std::vector<float> row_range(const std::vector<float>& x, int64_t first, int64_t n, int64_t cols) {
  return std::vector<float>(x.begin() + first * cols, x.begin() + (first + n) * cols);
}

std::vector<float> pad_rows(std::vector<float> x, int64_t rows_to, int64_t cols) {
  x.resize(static_cast<std::size_t>(rows_to * cols), 0.0f);
  return x;
}

std::vector<float> concat(const std::vector<std::vector<float>>& parts) {
  std::vector<float> y;
  std::size_t n = 0;
  for (const auto& p : parts) n += p.size();
  y.reserve(n);
  for (const auto& p : parts) y.insert(y.end(), p.begin(), p.end());
  return y;
}

namespace {
template <bool ToHalf>
std::vector<float> permute(const std::vector<float>& w, int64_t n_heads, int64_t hd, int64_t rd, int64_t cols) {
  std::vector<float> y = w;
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t j = 0; j < rd / 2; ++j)
      for (int64_t c = 0; c < 2; ++c) {
        const int64_t inter = h * hd + 2 * j + c, half = h * hd + c * (rd / 2) + j;
        const int64_t dst = ToHalf ? half : inter, src = ToHalf ? inter : half;
        std::memcpy(&y[dst * cols], &w[src * cols], row_bytes);
      }
  return y;
}
}  // namespace

std::vector<float> rope_interleaved_to_half(const std::vector<float>& w, int64_t n_heads, int64_t hd, int64_t rd,
                                            int64_t cols) {
  return permute<true>(w, n_heads, hd, rd, cols);
}
std::vector<float> rope_half_to_interleaved(const std::vector<float>& w, int64_t n_heads, int64_t hd, int64_t rd,
                                            int64_t cols) {
  return permute<false>(w, n_heads, hd, rd, cols);
}

}  // namespace gptrain::hf
