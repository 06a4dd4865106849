// Megatron's data-argument files: --data-args-path (the --data-path list in a file) and
// --per-split-data-args-path (the per-split lists in a JSON object). Errors name the flag, the file and,
// where the fault has one, its line.
#pragma once

#include <string>
#include <vector>

#include "data/loader/gpt_data.h"

namespace gptrain {

// The file's whitespace-separated items: prefixes, or weight prefix pairs (as --data-path takes them).
std::vector<std::string> read_data_args_file(const std::string& path);

// {"train": ..., "valid": ..., "test": ...}: each a list of weights and prefixes, one whitespace-separated
// string of them, or null (no data for that split); all three keys present, as Megatron reads them.
// Fills args' train/valid/test data paths.
void read_per_split_data_args(const std::string& path, DataArgs& args);

}  // namespace gptrain
