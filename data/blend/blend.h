// Megatron's dataset blending (docs/megatron-compat.md §2.5): --data-path parsing, weight normalization
// (numpy's pairwise float64 sum, so weights match bit for bit), per-dataset sample budgets with the
// mid-level surplus, and the deterministic greedy blend order (no RNG).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct BlendSpec {
  std::vector<std::string> prefixes;
  std::optional<std::vector<double>> weights;  // as given, not normalized
};

// Odd count -> prefixes only; even count -> (weight, prefix) pairs when every weight is a number, all
// prefixes when none is (Megatron's rule); some numbers and some not is refused. `flag` names the option
// in errors.
BlendSpec parse_blend(const std::vector<std::string>& items, const std::string& flag);

// Python's float(text): decimal digits (with single underscores), fraction, exponent, inf/infinity/nan,
// surrounding blanks; nullopt for anything else, hex ("0x10") included, where strtod would accept it.
std::optional<double> parse_python_float(const std::string& text);

// numpy.sum of a float64 vector (pairwise summation, blocks of 8 up to 128).
double numpy_sum(const std::vector<double>& v);
// w / sum(w), as Megatron's normalize().
std::vector<double> normalize_weights(const std::vector<double>& w);

// ceil(ceil(size * w_i) * (1 + surplus)) per dataset: the samples to build (surplus > 0) or to use (0).
std::vector<int64_t> samples_per_dataset(const std::vector<double>& normalized, int64_t size, double surplus);

struct BlendingIndex {
  std::vector<int16_t> dataset_index;         // (size)
  std::vector<int64_t> dataset_sample_index;  // (size)
};

// Sample s goes to argmax_i(w_i * max(s, 1) - count_i), ties to the lowest i.
BlendingIndex build_blending_index(const std::vector<double>& normalized, int64_t size);
// Exactly sizes[i] samples from dataset i: same rule over the datasets not yet exhausted.
BlendingIndex build_exhaustive_blending_index(const std::vector<int64_t>& sizes);

}  // namespace gptrain
