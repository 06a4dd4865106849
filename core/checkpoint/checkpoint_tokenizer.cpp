// Tokenizer flags from a checkpoint's metadata; see checkpoint_tokenizer.h.
#include "core/checkpoint/checkpoint_tokenizer.h"

#include "core/checkpoint/checkpoint.h"
#include "core/config/tokenizer_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace gptrain {

bool tokenizer_from_checkpoint(const FlagTable& t, TrainArgs& a, std::optional<int64_t> step) {
  const std::vector<std::string> names = with_tokenizer_flags({});
  for (const std::string& n : names)
    if (t.given(n)) return false;
  if (!a.checkpoint.load) return false;
  const auto ck = checkpoint::Checkpoint::open(*a.checkpoint.load,
                                               step ? std::optional(checkpoint::Step::at(*step)) : std::nullopt);
  const nlohmann::json& args = ck.metadata().args;
  std::vector<std::string> argv{"checkpoint"};
  for (const std::string& n : names) {
    std::string key = n;
    std::replace(key.begin(), key.end(), '-', '_');
    if (!args.contains(key) || args[key].is_null()) continue;
    const nlohmann::json& v = args[key];
    if (v.is_array() && v.empty()) continue;
    argv.push_back("--" + n);
    for (const nlohmann::json& e : v.is_array() ? v : nlohmann::json::array({v}))
      argv.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  }
  if (argv.size() == 1) return false;
  FlagTable from_ckpt = train_flag_table(a).only(names);
  std::vector<char*> cargv;
  for (std::string& s : argv) cargv.push_back(s.data());
  from_ckpt.parse(fmt::format("the tokenizer flags in {}/metadata.json", ck.dir()), static_cast<int>(cargv.size()),
                  cargv.data());
  std::string shown;
  for (size_t k = 1; k < argv.size(); ++k) shown += (k > 1 ? " " : "") + argv[k];
  // stderr: generate's stdout is the text.
  fmt::print(stderr, "tokenizer from {}/metadata.json: {}\n", ck.dir(), shown);
  return true;
}

}  // namespace gptrain
