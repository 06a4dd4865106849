// Expands --input arguments (files and shell globs) into the list of files to read, in order.
#pragma once

#include <string>
#include <vector>

namespace gptrain {

// Each argument is a file or a glob (*, ?, [..]); a glob's matches are taken in sorted order. A glob
// that matches nothing, a missing file or a directory throws gptrain::Error. Accepted names end in
// .jsonl, .json, .jsonl.gz, .json.gz, .jsonl.zst or .json.zst (other names are refused, to catch
// typos such as passing the output of a previous run).
std::vector<std::string> expand_input_files(const std::vector<std::string>& args);

}  // namespace gptrain
