// Megatron's --split: "969, 30, 1" -> normalized weights -> per-split ranges of sequence ids.
// Numbers are pulled out with a [.0-9]+ scan (any separators, as Megatron; but signs and letters, which
// Megatron's scan skips so that "-1,50,50" reads as 1,50,50, are refused), padded with zeros to three, divided by
// their float64 sum; book-ends are summed left to right; range k is [round(lo*N), round(hi*N)) with
// round-half-to-even (Python's round), and an empty book-end interval means "no such split".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

enum class SplitKind { train = 0, valid = 1, test = 2 };
const char* split_name(SplitKind s);
const char* split_name(int s);

// Normalized weights of the three splits; errors name the flag and what was expected.
std::array<double, 3> parse_split(const std::string& split);

struct SeqRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t size() const { return end - begin; }
};

// For N sequences: the sequence-id range of each split, nullopt where the split's weight is zero.
std::array<std::optional<SeqRange>, 3> split_ranges(const std::array<double, 3>& weights, int64_t num_sequences);

}  // namespace gptrain
