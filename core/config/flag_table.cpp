#include "core/config/flag_table.h"

#include "core/common/error.h"
#include "core/common/log.h"

#include "core/config/command_line.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <limits>
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

int to_int32(const std::string& s, const std::string& name, const std::string& where) {
  const int64_t x = to_int(s, name, where);
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    fail("{}--{}: {} is out of range", where, name, x);
  return static_cast<int>(x);
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

std::string joined(const std::vector<std::string>& v) {
  std::string all;
  for (const auto& c : v) all += (all.empty() ? "" : ", ") + c;
  return all;
}

const char* status_name(FlagTable::Status s) {
  switch (s) {
    case FlagTable::Status::Bound: return "implemented";
    case FlagTable::Status::Noop: return "accepted, no effect";
    case FlagTable::Status::Accepted: return "accepted values only";
    case FlagTable::Status::Unsupported: return "rejected";
  }
  return "?";
}

}  // namespace

void FlagTable::add(Flag f) {
  check(find(f.name) == nullptr, "flag table: --{} is declared twice", f.name);
  f.group = group_;
  flags_.push_back(std::move(f));
}

void FlagTable::value(const std::string& n, int* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_int32(single(v, n, w), n, w); },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, int64_t* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_int(single(v, n, w), n, w); },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, uint64_t* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) {
         const int64_t x = to_int(single(v, n, w), n, w);
         if (x < 0) fail("{}--{}: {} is negative", w, n, x);
         *p = static_cast<uint64_t>(x);
       },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, double* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_double(single(v, n, w), n, w); },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, float* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = static_cast<float>(to_double(single(v, n, w), n, w)); },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, std::string* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = single(v, n, w); },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<int>* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_int32(single(v, n, w), n, w); },
       [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<int64_t>* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_int(single(v, n, w), n, w); },
       [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<double>* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = to_double(single(v, n, w), n, w); },
       [p] { return opt_json(*p); }});
}
void FlagTable::value(const std::string& n, std::optional<std::string>* p, const std::string& h) {
  add({n,
       "",
       Kind::Value,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) { *p = single(v, n, w); },
       [p] { return opt_json(*p); }});
}
void FlagTable::choice(const std::string& n, std::string* p, std::vector<std::string> choices, const std::string& h) {
  add({n, "", Kind::Value, Status::Bound, h, choices,
       [p, n, choices](const auto& v, const auto& w) {
         const std::string& s = single(v, n, w);
         if (std::find(choices.begin(), choices.end(), s) == choices.end())
           fail("{}--{}: '{}' is not a choice; expected one of {}", w, n, s, joined(choices));
         *p = s;
       },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::flag(const std::string& n, bool* p, const std::string& h) {
  add({n,
       "",
       Kind::Switch,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) {
         const std::string& s = single(v, n, w);
         if (s == "true" || s == "True" || s == "1")
           *p = true;
         else if (s == "false" || s == "False" || s == "0")
           *p = false;
         else
           fail("{}--{}: '{}' is not a boolean", w, n, s);
       },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::list(const std::string& n, std::vector<std::string>* p, const std::string& h) {
  add({n,
       "",
       Kind::List,
       Status::Bound,
       h,
       {},
       [p](const auto& v, const auto&) { *p = v; },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::list(const std::string& n, std::vector<int>* p, const std::string& h) {
  add({n,
       "",
       Kind::List,
       Status::Bound,
       h,
       {},
       [p, n](const auto& v, const auto& w) {
         p->clear();
         for (const std::string& x : v) p->push_back(to_int32(x, n, w));
       },
       [p] { return nlohmann::json(*p); }});
}
void FlagTable::alias(const std::string& name, const std::string& target) {
  const Flag* t = find(target);
  check(t != nullptr && t->status == Status::Bound, "flag table: alias --{} of unknown flag --{}", name, target);
  check(find(name) == nullptr, "flag table: --{} is declared twice", name);
  aliases_.push_back({name, target});
}
void FlagTable::noop(const std::string& n, Kind kind, const std::string& what) {
  add({n, "", kind, Status::Noop, what, {}, nullptr, nullptr});
}
void FlagTable::accept_values(const std::string& n, std::vector<std::string> allowed, const std::string& what) {
  add({n, "", Kind::Value, Status::Accepted, what, std::move(allowed), nullptr, nullptr});
}
void FlagTable::unsupported(const std::string& n, const std::string& reason) {
  add({n, "", Kind::List, Status::Unsupported, reason, {}, nullptr, nullptr});
}
void FlagTable::require(const std::string& name) {
  check(find(name) != nullptr, "flag table: required flag --{} is not declared", name);
  required_.push_back(name);
}

const FlagTable::Flag* FlagTable::find(const std::string& name) const {
  for (const auto& f : flags_)
    if (f.name == name) return &f;
  for (const auto& [a, target] : aliases_)
    if (a == name) return find(target);
  return nullptr;
}

bool FlagTable::given(const std::string& name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

FlagTable FlagTable::only(const std::vector<std::string>& names) const {
  FlagTable t;
  for (const auto& n : names)
    check(std::any_of(flags_.begin(), flags_.end(), [&](const Flag& f) { return f.name == n; }),
          "flag table: --{} is not a flag of this table", n);
  for (const auto& f : flags_)
    if (std::find(names.begin(), names.end(), f.name) != names.end()) t.flags_.push_back(f);
  for (const auto& a : aliases_)
    if (std::find(names.begin(), names.end(), a.second) != names.end()) t.aliases_.push_back(a);
  return t;
}

FlagTable FlagTable::only_groups(const std::vector<std::string>& groups) const {
  std::vector<std::string> names;
  for (const auto& f : flags_)
    if (std::find(groups.begin(), groups.end(), f.group) != groups.end()) names.push_back(f.name);
  check(!names.empty(), "flag table: no flag in groups {}", joined(groups));
  return only(names);
}

namespace {

// What a given flag that has no field does: noop flags say so once, accepted flags check the value.
void apply_unbound(const FlagTable::Flag& f, const std::vector<std::string>& vals, const std::string& where) {
  if (f.status == FlagTable::Status::Unsupported)
    fail("{}--{} is a Megatron flag that gptrain does not implement: {}", where, f.name, f.help);
  if (f.status == FlagTable::Status::Noop) {
    log::info("--{}: accepted for compatibility, no effect in gptrain: {}", f.name, f.help);
    return;
  }
  const std::string& v = single(vals, f.name, where);
  if (std::find(f.allowed.begin(), f.allowed.end(), v) == f.allowed.end())
    fail("{}--{} {}: gptrain takes only {} ({})", where, f.name, v, joined(f.allowed), f.help);
}

}  // namespace

std::string FlagTable::help(const std::string& app_name) const {
  auto line = [](const std::string& name, Kind kind, const std::string& help) {
    const std::string arg = kind == Kind::Switch ? "" : kind == Kind::Value ? " VALUE" : " VALUE...";
    const std::string left = "  --" + name + arg;
    return fmt::format("{:<42} {}\n", left, help);
  };
  std::string out = fmt::format(
      "usage: {} [--flag VALUE ...]\n(a unique prefix names a flag, --flag=value works, the last of a repeated flag "
      "wins)\n\n",
      app_name);
  out += line("help", Kind::Switch, "print this help and exit");
  out += line("config", Kind::Value, "YAML file with the same keys as the flags (flags win)");
  out += line("list-flags", Kind::Switch, "print every flag (group, status, default) as JSON and exit");
  std::vector<std::string> groups;
  for (const auto& f : flags_)
    if (f.status == Status::Bound && std::find(groups.begin(), groups.end(), f.group) == groups.end())
      groups.push_back(f.group);
  for (const auto& g : groups) {
    out += "\n" + g + ":\n";
    for (const auto& f : flags_)
      if (f.status == Status::Bound && f.group == g) out += line(f.name, f.kind, f.help);
    for (const auto& [a, target] : aliases_)
      if (find(target)->group == g) out += line(a, find(target)->kind, "alias of --" + target);
  }
  std::string accepted, rejected;
  for (const auto& f : flags_) {
    if (f.status == Status::Noop) accepted += line(f.name, f.kind, "no effect: " + f.help);
    if (f.status == Status::Accepted) accepted += line(f.name, f.kind, "only " + joined(f.allowed) + ": " + f.help);
    if (f.status == Status::Unsupported) rejected += line(f.name, Kind::Switch, f.help);
  }
  if (!accepted.empty()) out += "\nMegatron flags accepted without effect:\n" + accepted;
  if (!rejected.empty()) out += "\nMegatron flags gptrain rejects (with the reason):\n" + rejected;
  return out;
}

bool FlagTable::parse(const std::string& app_name, int argc, const char* const* argv) {
  using Arity = CommandLineOption::Arity;
  auto arity_of = [](Kind k) {
    return k == Kind::Switch ? Arity::None : k == Kind::Value ? Arity::One : Arity::OneOrMore;
  };
  std::vector<CommandLineOption> options = {{"config", Arity::One}, {"list-flags", Arity::None}};
  for (const auto& f : flags_)
    options.push_back({f.name, f.status == Status::Unsupported ? Arity::Any : arity_of(f.kind)});
  for (const auto& [a, target] : aliases_) options.push_back({a, arity_of(find(target)->kind)});
  const ParsedCommandLine cl = parse_command_line(app_name, argc, argv, options);
  if (cl.help) {
    std::fputs(help(app_name).c_str(), stdout);
    return false;
  }
  if (cl.values.count("list-flags")) {
    std::puts(list_json().dump(1).c_str());
    return false;
  }
  given_.clear();
  for (const std::string& name : cl.given) {
    if (name == "config" || name == "list-flags") continue;
    std::vector<std::string> vals = cl.values.at(name);
    std::string target = name;
    for (const auto& [a, t] : aliases_)
      if (a == name) target = t;
    const Flag* f = find(target);
    if (target != name)
      check(!cl.values.count(target), "--{} and --{} name the same setting; give one of them", name, target);
    if (f->kind == Kind::Switch && f->status != Status::Unsupported) vals = {"true"};
    given_.push_back(f->name);
    if (f->status == Status::Bound)
      f->set(vals, "");
    else
      apply_unbound(*f, vals, "");
  }
  if (cl.values.count("config")) apply_yaml(cl.values.at("config").at(0), given_);
  for (const auto& r : required_) check(given(r), "{}: --{} is required", app_name, r);
  return true;
}

void FlagTable::apply_yaml(const std::string& path, const std::vector<std::string>& skip) {
  std::vector<YAML::Node> docs;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("--config {}: is a directory, expected a YAML file", path);
  try {
    docs = YAML::LoadAllFromFile(path);
  } catch (const YAML::Exception& e) {
    fail("--config {}: cannot read YAML: {}", path, e.what());
  }
  // A second document ("---") would otherwise be ignored without a word: its flags never reach the run.
  // Empty documents (a leading or trailing "---") are harmless.
  std::erase_if(docs, [](const YAML::Node& d) { return d.IsNull(); });
  if (docs.size() > 1)
    fail("--config {}:{}: a second YAML document (after '---'); put every flag in one document", path,
         docs[1].Mark().line + 1);
  const YAML::Node root = docs.empty() ? YAML::Node() : docs.front();
  if (root.IsNull()) return;
  if (!root.IsMap()) fail("--config {}: expected a mapping of flag names to values", path);
  std::map<std::string, int> seen;  // flag name -> line, to catch num-layers and num_layers both given
  for (const auto& kv : root) {
    const int line = kv.first.Mark().line + 1;
    const std::string where = fmt::format("{}:{}: ", path, line);
    // as<std::string>() on a list or mapping throws yaml-cpp's BadConversion, which names no file.
    if (!kv.first.IsScalar()) fail("{}expected a flag name as the key, not a list or mapping", where);
    const std::string key = kv.first.as<std::string>();
    const std::string name = dashes(key);
    if (name == "config") fail("{}--config cannot be nested", where);
    const Flag* f = find(name);
    if (!f) fail("{}unknown key '{}' (keys are pretrain_gpt flag names, e.g. num_layers or num-layers)", where, key);
    const auto [it, fresh] = seen.emplace(f->name, line);
    if (!fresh) fail("{}'{}' sets --{}, which line {} already sets", where, key, f->name, it->second);
    if (std::find(skip.begin(), skip.end(), f->name) != skip.end()) continue;  // the command line wins
    std::vector<std::string> vals;
    const YAML::Node& v = kv.second;
    if (v.IsSequence()) {
      if (f->kind != Kind::List) fail("{}{} takes a single value, not a list", where, key);
      for (const auto& e : v) {
        if (!e.IsScalar()) fail("{}{}: expected a list of values, not of lists or mappings", where, key);
        vals.push_back(e.as<std::string>());
      }
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
    given_.push_back(f->name);
    if (f->status == Status::Bound)
      f->set(vals, where);
    else
      apply_unbound(*f, vals, where);
  }
}

nlohmann::json FlagTable::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : flags_)
    if (f.status == Status::Bound) j[underscores(f.name)] = f.get();
  return j;
}

nlohmann::json FlagTable::list_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : flags_) {
    nlohmann::json e = {{"name", f.name},
                        {"group", f.group},
                        {"status", status_name(f.status)},
                        {"kind", f.kind == Kind::Switch ? "switch"
                                 : f.kind == Kind::List ? "list"
                                                        : "value"},
                        {"help", f.help}};
    if (!f.allowed.empty()) e["allowed"] = f.allowed;
    if (f.status == Status::Bound) e["default"] = f.get();
    out.push_back(e);
  }
  for (const auto& [a, target] : aliases_)
    out.push_back({{"name", a}, {"group", find(target)->group}, {"status", "alias"}, {"alias_of", target}});
  return out;
}

}  // namespace gptrain
