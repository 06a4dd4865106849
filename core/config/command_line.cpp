#include "core/config/command_line.h"

#include "core/common/error.h"

#include <algorithm>
#include <optional>

namespace gptrain {

namespace {

using Arity = CommandLineOption::Arity;

bool is_flag_token(const std::string& t) { return t == "-h" || (t.size() > 2 && t[0] == '-' && t[1] == '-'); }

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  // A name over twice as long as every known one is no typo of them; the distance costs O(length) per
  // known name, which a long garbage argument (40 KB: seconds for the whole flag table) would pay.
  std::size_t longest = 0;
  for (const std::string& k : known) longest = std::max(longest, k.size());
  if (name.size() > 2 * longest) return "";
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const std::string& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

ParsedCommandLine parse_command_line(const std::string& app, int argc, const char* const* argv,
                                     const std::vector<CommandLineOption>& options) {
  std::vector<std::string> names;
  for (const auto& o : options) names.push_back(o.name);
  auto option_of = [&](const std::string& n) -> const CommandLineOption& {
    return *std::find_if(options.begin(), options.end(), [&](const auto& o) { return o.name == n; });
  };
  ParsedCommandLine out;
  std::vector<std::string> problems;  // unknown flags and stray arguments, reported together
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok == "-h" || tok == "--help") {
      out.help = true;
      continue;
    }
    if (!is_flag_token(tok)) {
      problems.push_back(
          fmt::format("'{}': unexpected argument (flags start with --; a value belongs after its flag)", tok));
      continue;
    }
    std::string name = tok.substr(2);
    std::optional<std::string> inline_value;
    if (const std::size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    std::string canon;
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      canon = name;
    } else {
      std::vector<std::string> candidates;
      for (const std::string& n : names)
        if (n.compare(0, name.size(), name) == 0) candidates.push_back(n);
      if (candidates.size() > 1) {
        std::string all;
        for (const auto& c : candidates) all += (all.empty() ? "--" : ", --") + c;
        fail("ambiguous option: --{} could match {}", name, all);
      }
      if (candidates.size() == 1) canon = candidates[0];
    }
    if (canon.empty()) {
      const std::string near = nearest_name(name, names);
      problems.push_back(near.empty() ? fmt::format("--{}: unknown flag", name)
                                      : fmt::format("--{}: unknown flag (did you mean --{}?)", name, near));
      while (i + 1 < argc && !is_flag_token(argv[i + 1])) ++i;  // its values
      continue;
    }
    const CommandLineOption& opt = option_of(canon);
    std::vector<std::string> vals;
    switch (opt.arity) {
      case Arity::None: check(!inline_value, "--{} takes no value (got '{}')", canon, inline_value.value_or("")); break;
      case Arity::One:
        if (inline_value) {
          vals.push_back(*inline_value);
        } else {
          check(i + 1 < argc && !is_flag_token(argv[i + 1]), "--{}: expected one value", canon);
          vals.push_back(argv[++i]);
        }
        break;
      case Arity::OneOrMore:
      case Arity::Any:
        if (inline_value) vals.push_back(*inline_value);
        while (i + 1 < argc && !is_flag_token(argv[i + 1])) vals.push_back(argv[++i]);
        check(opt.arity == Arity::Any || !vals.empty(), "--{}: expected at least one value", canon);
        break;
    }
    if (!out.values.count(canon)) out.given.push_back(canon);
    out.values[canon] = std::move(vals);  // a flag given twice keeps its last value
  }
  if (!problems.empty()) {
    std::string msg = fmt::format("{} problem{} with the flags of {} (run with --help for the flags):", problems.size(),
                                  problems.size() == 1 ? "" : "s", app);
    for (const auto& p : problems) msg += "\n  " + p;
    fail("{}", msg);
  }
  return out;
}

}  // namespace gptrain
