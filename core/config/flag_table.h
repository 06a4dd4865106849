// A table of command-line flags bound to struct fields, parsed from argv (CLI11) and from a YAML file
// with the same keys (dashes or underscores; flags win), and dumped to JSON (checkpoint "args").
// Also holds the Megatron flags gptrain does not implement, so they are rejected by name with a reason
// instead of "unknown option".
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
  struct Flag {
    std::string name;  // without "--", dashes
    Kind kind;
    std::string help;
    std::function<void(const std::vector<std::string>&, const std::string& where)> set;
    std::function<nlohmann::json()> get;
  };

  void value(const std::string& name, int* p, const std::string& help);
  void value(const std::string& name, int64_t* p, const std::string& help);
  void value(const std::string& name, double* p, const std::string& help);
  void value(const std::string& name, std::string* p, const std::string& help);
  void value(const std::string& name, std::optional<int>* p, const std::string& help);
  void value(const std::string& name, std::optional<int64_t>* p, const std::string& help);
  void value(const std::string& name, std::optional<double>* p, const std::string& help);
  void value(const std::string& name, std::optional<std::string>* p, const std::string& help);
  void choice(const std::string& name, std::string* p, std::vector<std::string> choices, const std::string& help);
  void flag(const std::string& name, bool* p, const std::string& help);  // store-true
  void list(const std::string& name, std::vector<std::string>* p, const std::string& help);
  // A Megatron flag gptrain rejects: `reason` says why / what to use instead.
  void unsupported(const std::string& name, const std::string& reason);

  // Parses argv into the bound fields; when --config names a YAML file, its keys fill the fields argv
  // did not set. Throws Error for unknown/unsupported flags or bad values. Returns false when --help
  // was printed.
  bool parse(const std::string& app_name, int argc, const char* const* argv);
  // Applies a YAML mapping (keys in dash or underscore form), skipping names in `skip`.
  void apply_yaml(const std::string& path, const std::vector<std::string>& skip);

  // {"num_layers": 12, ...} with underscores, as Megatron's args namespace.
  nlohmann::json to_json() const;
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  const Flag* find(const std::string& name) const;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> unsupported_;  // name, reason
};

}  // namespace gptrain
