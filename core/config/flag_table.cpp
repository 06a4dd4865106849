#include "core/config/flag_table.h"

#include "core/common/error.h"

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace gptrain {

namespace {

std::string dashes(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}
std::string underscores(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

const std::string& single(const std::vector<std::string>& v, const std::string& name, const std::string& where) {
  if (v.size() != 1) fail("{}--{}: expected one value, got {}", where, name, v.size());
  return v[0];
}

int64_t to_int(const std::string& s, const std::string& name, const std::string& where) {
  std::size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) fail("{}--{}: '{}' is not an integer", where, name, s);
  return v;
}

double to_double(const std::string& s, const std::string& name, const std::string& where) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) fail("{}--{}: '{}' is not a number", where, name, s);
  return v;
}

template <typename T>
nlohmann::json opt_json(const std::optional<T>& o) {
  return o ? nlohmann::json(*o) : nlohmann::json(nullptr);
}

}  // namespace

void FlagTable::value(const std::string& n, int* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) {
                      const int64_t x = to_int(single(v, n, w), n, w);
                      if (x < INT32_MIN || x > INT32_MAX) fail("{}--{}: {} is out of range", w, n, x);
                      *p = int(x);
                    },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, int64_t* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = to_int(single(v, n, w), n, w); },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, double* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = to_double(single(v, n, w), n, w); },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, std::string* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = single(v, n, w); },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<int>* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) {
                      const int64_t x = to_int(single(v, n, w), n, w);
                      if (x < INT32_MIN || x > INT32_MAX) fail("{}--{}: {} is out of range", w, n, x);
                      *p = int(x);
                    },
                    [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<int64_t>* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = to_int(single(v, n, w), n, w); },
                    [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<double>* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = to_double(single(v, n, w), n, w); },
                    [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<std::string>* p, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n](const auto& v, const auto& w) { *p = single(v, n, w); },
                    [p] { return opt_json(*p); }});
}
void FlagTable::choice(const std::string& n, std::string* p, std::vector<std::string> choices, const std::string& h) {
  flags_.push_back({n, Kind::Value, h, [p, n, choices](const auto& v, const auto& w) {
                      const std::string& s = single(v, n, w);
                      if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
                        std::string all;
                        for (const auto& c : choices) all += (all.empty() ? "" : ", ") + c;
                        fail("{}--{}: '{}' is not a choice; expected one of {}", w, n, s, all);
                      }
                      *p = s;
                    },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::flag(const std::string& n, bool* p, const std::string& h) {
  flags_.push_back({n, Kind::Switch, h, [p, n](const auto& v, const auto& w) {
                      const std::string& s = single(v, n, w);
                      if (s == "true" || s == "True" || s == "1") *p = true;
                      else if (s == "false" || s == "False" || s == "0") *p = false;
                      else fail("{}--{}: '{}' is not a boolean", w, n, s);
                    },
                    [p] { return nlohmann::json(*p); }});
}
void FlagTable::list(const std::string& n, std::vector<std::string>* p, const std::string& h) {
  flags_.push_back({n, Kind::List, h, [p](const auto& v, const auto&) { *p = v; }, [p] { return nlohmann::json(*p); }});
}
void FlagTable::unsupported(const std::string& n, const std::string& reason) { unsupported_.push_back({n, reason}); }

const FlagTable::Flag* FlagTable::find(const std::string& name) const {
  for (const auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

bool FlagTable::parse(const std::string& app_name, int argc, const char* const* argv) {
  CLI::App app{app_name + ": GPT pretraining with Megatron-LM's flags (see docs for what gptrain implements)"};
  std::map<std::string, std::vector<std::string>> raw;
  std::map<std::string, bool> switches;
  std::map<std::string, CLI::Option*> opts;
  for (const auto& f : flags_) {
    CLI::Option* o = nullptr;
    if (f.kind == Kind::Switch) {
      o = app.add_flag("--" + f.name, switches[f.name], f.help);
    } else {
      o = app.add_option("--" + f.name, raw[f.name], f.help);
      if (f.kind == Kind::Value) o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      else o->expected(1, 1 << 20)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    opts[f.name] = o;
  }
  std::optional<std::string> config;
  app.add_option("--config", config, "YAML file with the same keys as the flags (flags win)");
  std::map<std::string, std::vector<std::string>> unsup_raw;
  std::map<std::string, CLI::Option*> unsup_opts;
  for (const auto& [n, why] : unsupported_) {
    unsup_opts[n] = app.add_option("--" + n, unsup_raw[n], "not implemented by gptrain: " + why)
                        ->expected(0, 1 << 20)
                        ->group("Megatron flags gptrain rejects");
  }
  try {
    app.parse(argc, const_cast<char**>(argv));  // CLI11 2.1 takes char**; it does not write to argv
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    fail("{}: {} (run with --help for the flags)", app_name, e.what());
  }
  for (const auto& [n, why] : unsupported_)
    if (unsup_opts[n]->count() > 0) fail("--{} is a Megatron flag that gptrain does not implement: {}", n, why);
  std::vector<std::string> given;
  for (const auto& f : flags_) {
    if (opts[f.name]->count() == 0) continue;
    given.push_back(f.name);
    if (f.kind == Kind::Switch) f.set({switches[f.name] ? "true" : "false"}, "");
    else f.set(raw[f.name], "");
  }
  if (config) apply_yaml(*config, given);
  return true;
}

void FlagTable::apply_yaml(const std::string& path, const std::vector<std::string>& skip) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail("--config {}: cannot read YAML: {}", path, e.what());
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) fail("--config {}: expected a mapping of flag names to values", path);
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const std::string name = dashes(key);
    const std::string where = fmt::format("{}:{}: ", path, kv.first.Mark().line + 1);
    for (const auto& [n, why] : unsupported_)
      if (n == name) fail("{}{} is a Megatron flag that gptrain does not implement: {}", where, key, why);
    if (name == "config") fail("{}--config cannot be nested", where);
    const Flag* f = find(name);
    if (!f) fail("{}unknown key '{}' (keys are pretrain_gpt flag names, e.g. num_layers or num-layers)", where, key);
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;  // the command line wins
    std::vector<std::string> vals;
    const YAML::Node& v = kv.second;
    if (v.IsSequence()) {
      if (f->kind != Kind::List) fail("{}{} takes a single value, not a list", where, key);
      for (const auto& e : v) vals.push_back(e.as<std::string>());
    } else if (v.IsScalar()) {
      const std::string s = v.as<std::string>();
      if (f->kind == Kind::List) {
        std::istringstream in(s);
        for (std::string w; in >> w;) vals.push_back(w);
      } else {
        vals.push_back(s);
      }
    } else if (v.IsNull()) {
      continue;  // "key:" with no value leaves the default
    } else {
      fail("{}{}: expected a scalar or a list", where, key);
    }
    f->set(vals, where);
  }
}

nlohmann::json FlagTable::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : flags_) j[underscores(f.name)] = f.get();
  return j;
}

}  // namespace gptrain
