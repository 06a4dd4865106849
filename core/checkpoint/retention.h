// Which iterations a save directory holds, and deleting the ones a later save supersedes:
// --save-retain-interval (Megatron) keeps those at multiples of the interval and the latest; a non-persistent
// save directory keeps only its latest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain::checkpoint {

// Deletes <save_dir>/iter_N for every N < latest with N % retain_interval != 0 that is a gptrain checkpoint
// (it holds metadata.json) and is not the one the tracker names. Each goes through a rename to a hidden name
// first, so an interrupted deletion never leaves a partial iter_N behind. Returns the deleted iterations,
// ascending.
std::vector<int64_t> delete_unretained(const std::string& save_dir, int64_t latest, int64_t retain_interval);
// delete_unretained keeping none of the older iterations (the tracked one excepted).
std::vector<int64_t> delete_older(const std::string& save_dir, int64_t latest);

// The iterations N whose <dir>/iter_N is a gptrain checkpoint directory (holds metadata.json), ascending.
std::vector<int64_t> saved_iterations(const std::string& dir);

}  // namespace gptrain::checkpoint
