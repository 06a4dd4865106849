// A table of command-line flags bound to struct fields: parsed from argv (command_line.h: argparse's
// grammar, as Megatron's scripts use it) and from a YAML file
// with the same keys (dashes or underscores; flags win), dumped to JSON (checkpoint "args") and listed
// (--list-flags). Every gptrain app parses its flags through one: the training flags come from
// train_flag_table (train_args.h), an app's own flags are bound next to them.
//
// Besides bound flags the table knows Megatron flags that gptrain accepts without a field (noop: the
// reason is printed once when given; accept_values: a choice whose only allowed values are what gptrain
// does anyway) and Megatron flags it rejects by name with a reason, instead of "unknown option".
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

class FlagTable {
 public:
  enum class Kind { Value, Switch, List };
  // bound: sets a field; noop / accepted: accepted without a field; unsupported: rejected by name.
  enum class Status { Bound, Noop, Accepted, Unsupported };
  struct Flag {
    std::string name;   // without "--", dashes
    std::string group;  // "model", "data", ... (the struct it binds to), or the app's name
    Kind kind = Kind::Value;
    Status status = Status::Bound;
    std::string help;                  // for noop / accepted / unsupported: what gptrain does instead, or why not
    std::vector<std::string> allowed;  // accepted: the only values taken
    std::function<void(const std::vector<std::string>&, const std::string& where)> set;  // bound only
    std::function<nlohmann::json()> get;                                                 // bound only
  };

  // Flags declared after this call belong to `group`.
  void group(const std::string& name) { group_ = name; }

  void value(const std::string& name, int* p, const std::string& help);
  void value(const std::string& name, int64_t* p, const std::string& help);
  void value(const std::string& name, uint64_t* p, const std::string& help);
  void value(const std::string& name, double* p, const std::string& help);
  void value(const std::string& name, float* p, const std::string& help);
  void value(const std::string& name, std::string* p, const std::string& help);
  void value(const std::string& name, std::optional<int>* p, const std::string& help);
  void value(const std::string& name, std::optional<int64_t>* p, const std::string& help);
  void value(const std::string& name, std::optional<double>* p, const std::string& help);
  void value(const std::string& name, std::optional<std::string>* p, const std::string& help);
  void choice(const std::string& name, std::string* p, std::vector<std::string> choices, const std::string& help);
  void flag(const std::string& name, bool* p, const std::string& help);  // store-true
  void list(const std::string& name, std::vector<std::string>* p, const std::string& help);
  void list(const std::string& name, std::vector<int>* p, const std::string& help);
  // A second name for a bound flag (the later of the two on the command line wins).
  void alias(const std::string& name, const std::string& target);
  // A Megatron flag gptrain takes without effect: `what` says what gptrain does instead (printed once as
  // an info line when the flag is given). kind: Switch or Value.
  void noop(const std::string& name, Kind kind, const std::string& what);
  // A Megatron choice whose only values gptrain takes are `allowed` (what it does anyway): no field.
  void accept_values(const std::string& name, std::vector<std::string> allowed, const std::string& what);
  // A Megatron flag gptrain rejects: `reason` says why / what to use instead.
  void unsupported(const std::string& name, const std::string& reason);
  // The flag must be given (on the command line or in the YAML file).
  void require(const std::string& name);

  // The flags of this table named in `names` (bound to the same fields), in table order; every name
  // must exist. An app that takes a few of the training flags binds them this way.
  FlagTable only(const std::vector<std::string>& names) const;
  // The flags of the named groups ("parallel", "backend", ...), in table order.
  FlagTable only_groups(const std::vector<std::string>& groups) const;

  // Parses argv into the bound fields; when --config names a YAML file, its keys fill the fields argv
  // did not set. Throws Error for unknown/unsupported flags, bad values and missing required flags.
  // Returns false when --help or --list-flags printed (the app exits 0).
  bool parse(const std::string& app_name, int argc, const char* const* argv);
  // Applies a YAML mapping (keys in dash or underscore form), skipping names in `skip`.
  void apply_yaml(const std::string& path, const std::vector<std::string>& skip);
  // The --help text: the flags by group, then the Megatron flags accepted without effect and rejected.
  std::string help(const std::string& app_name) const;
  // Whether the last parse saw the flag (command line or YAML).
  bool given(const std::string& name) const;

  // {"num_layers": 12, ...} with underscores, as Megatron's args namespace (bound flags only).
  nlohmann::json to_json() const;
  // Every flag: [{"name", "group", "status", "kind", "help", "allowed"?, "default"?}] (--list-flags).
  nlohmann::json list_json() const;
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  void add(Flag f);
  const Flag* find(const std::string& name) const;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> aliases_;  // name, target
  std::vector<std::string> required_, given_;
  std::string group_ = "general";
};

}  // namespace gptrain
