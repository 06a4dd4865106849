// --save-retain-interval (Megatron): of a save directory's iteration checkpoints, keep those at multiples
// of the interval and the latest; delete the others that the latest supersedes.
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

}  // namespace gptrain::checkpoint
