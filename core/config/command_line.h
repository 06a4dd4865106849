// The command-line grammar every gptrain app shares, Python argparse's as Megatron's scripts rely on it:
//   --name value, --name=value, a list flag's values up to the next --flag;
//   a unique prefix names a flag (--vocab for --vocab-file); an ambiguous one is an error listing the
//   flags it could mean; an exact name always wins over longer names it prefixes (--lr vs --lr-decay-style);
//   a flag given twice keeps the last value;
//   unknown flags are reported one per line, each with the nearest known flag.
// FlagTable (flag_table.h) declares the flags and applies the values; this file only reads argv.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gptrain {

struct CommandLineOption {
  enum class Arity { None, One, OneOrMore, Any };  // switch, value, list, list that may be empty
  std::string name;                                // without "--"
  Arity arity = Arity::One;
};

struct ParsedCommandLine {
  std::map<std::string, std::vector<std::string>> values;  // option name -> its last occurrence's values
  std::vector<std::string> given;                          // option names in the order first given
  bool help = false;                                       // -h or --help (anywhere)
};

// Throws Error for a bad value count or an ambiguous prefix ("--x: ..."), and for unknown flags and
// stray arguments (one line each, an unknown flag with the nearest known one; `app` names the command).
ParsedCommandLine parse_command_line(const std::string& app, int argc, const char* const* argv,
                                     const std::vector<CommandLineOption>& options);

// The known name closest to `name` by edit distance (for "did you mean"), "" when there is none or when
// `name` is over twice as long as every known name.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

}  // namespace gptrain
