// Host-side reshuffles the adapters share: 2-D transposes, vocab padding/stripping, and the RoPE
// row permutations between the interleaved (pairs 2j, 2j+1) and half-split (pairs j, j + rd/2)
// conventions, applied per head to the first rd (rotary) rows of each head.
#pragma once

#include <cstdint>
#include <vector>

namespace gptrain::hf {

// (rows, cols) -> (cols, rows)
std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols);
// First `keep` rows of a (rows, cols) matrix (or vector when cols == 1).
std::vector<float> take_rows(std::vector<float> x, int64_t keep, int64_t cols);  // in place: no second copy
// Rows [first, first + n) of a (rows, cols) matrix.
std::vector<float> row_range(const std::vector<float>& x, int64_t first, int64_t n, int64_t cols);
// x (rows, cols) followed by zero rows up to `rows_to` rows.
std::vector<float> pad_rows(std::vector<float> x, int64_t rows_to, int64_t cols);
// Concatenate row blocks (each a multiple of cols).
std::vector<float> concat(const std::vector<std::vector<float>>& parts);

// w: (n_heads * head_dim, cols) rows of q or k projections (or their bias with cols == 1).
// interleaved row (2j + c) of a head's rotary part -> half-split row (c * rd/2 + j); rows >= rd stay.
std::vector<float> rope_interleaved_to_half(const std::vector<float>& w, int64_t n_heads, int64_t head_dim, int64_t rd,
                                            int64_t cols);
std::vector<float> rope_half_to_interleaved(const std::vector<float>& w, int64_t n_heads, int64_t head_dim, int64_t rd,
                                            int64_t cols);

}  // namespace gptrain::hf
