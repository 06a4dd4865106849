// One parser under fuzzing: how to make its valid seed inputs, how to feed it one input, and what its
// refusals must say. The driver (fuzz_parsers.cpp) mutates the seeds and checks that every input is
// either accepted or refused with gptrain::Error naming the file (or flag).
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gptrain::fuzz {

namespace fs = std::filesystem;

// Thrown by a target when the parser accepted an input it should have refused (or returned something
// that contradicts the input): a silent acceptance.
struct Violation : std::logic_error {
  using std::logic_error::logic_error;
};

struct Target {
  std::string name;
  // Valid inputs, built once; `dir` is an empty folder the target may keep fixed files in (the other
  // files of a multi-file format).
  std::function<std::vector<std::string>(const fs::path& dir)> seeds;
  // Feeds one input to the parser. `dir` is the seeds' folder, `in` an empty folder for this input.
  // Returns when the input was accepted (after checking what the parser made of it), throws what the
  // parser threw otherwise.
  std::function<void(const std::string& input, const fs::path& dir, const fs::path& in)> run;
  // Punctuation and keywords of the format, for the token mutation.
  std::vector<std::string> dictionary;
  // What a refusal's message must contain for the user to know where the problem is; default: the
  // input's folder (every input file lives there, and messages name the file).
  std::function<bool(const std::string& message, const fs::path& in)> names_source;
};

std::vector<Target> data_targets();  // fuzz_targets_data.cpp
std::vector<Target> core_targets();  // fuzz_targets_core.cpp

// Small helpers shared by the target files.
void write_file(const fs::path& path, const std::string& bytes);
std::string read_file(const fs::path& path);
// Several files in one input: "<name>\n<length>\n<bytes>" repeated. The mutations may damage the framing;
// unpack then takes what it can (the parser sees damaged files, never a harness error).
std::string pack_files(const std::vector<std::pair<std::string, std::string>>& files);
void unpack_files(const std::string& input, const fs::path& in, const std::vector<std::string>& names);

}  // namespace gptrain::fuzz
