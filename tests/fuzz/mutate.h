// The fuzz pass's input generator: a seeded random stream and the mutations applied to valid seed
// inputs. Everything is a function of (seed, target, iteration), so any input can be rebuilt from
// the numbers a failure report prints.
#pragma once

#include "core/common/splitmix64.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain::fuzz {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64(state_++); }
  // Uniform in [0, n) (n > 0; the modulo bias is irrelevant here).
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }

 private:
  uint64_t state_;
};

// One mutated input: which seed it came from and the mutations applied, for the report.
struct Mutated {
  std::string bytes;
  size_t seed_index = 0;
  std::vector<std::string> steps;
};

// Applies 1-4 random mutations (one in half the inputs) to a random seed: bit flips, byte changes, inserts, deletes,
// duplicated ranges, truncation, splicing with another seed, interesting integers written over a
// decimal number or over 1/2/4/8 raw bytes, long runs of one byte, invalid UTF-8, and tokens from the
// target's dictionary (its format's punctuation and keywords).
Mutated mutate(const std::vector<std::string>& seeds, const std::vector<std::string>& dictionary, Rng& rng);

// "4d 4d 49 ..." (the whole input, 32 bytes a line).
std::string hex_dump(const std::string& bytes);

}  // namespace gptrain::fuzz
