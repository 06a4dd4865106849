// Tokenizer flags from a checkpoint's metadata; see checkpoint_tokenizer.h.
#include "core/checkpoint/checkpoint_tokenizer.h"

#include "core/checkpoint/checkpoint.h"
#include "core/config/tokenizer_spec.h"

#include "core/common/error.h"
#include "core/common/log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

namespace {

// "GPT2BPETokenizer (vocab_file /v/vocab.json, merge_file /v/merges.txt)": the type and the files or size
// that fix its vocabulary, from a checkpoint's args (or the run's flags in the same form).
std::string tokenizer_text(const nlohmann::json& args, const std::string& fallback_type) {
  std::string type = fallback_type;
  if (args.contains("tokenizer_type") && args["tokenizer_type"].is_string()) type = args["tokenizer_type"];
  std::vector<std::string> parts;
  for (const char* key : {"vocab_file", "merge_file", "tokenizer_model", "vocab_size"})
    if (args.contains(key) && !args[key].is_null())
      parts.push_back(
          fmt::format("{} {}", key, args[key].is_string() ? args[key].get<std::string>() : args[key].dump()));
  return parts.empty() ? type : fmt::format("{} ({})", type, fmt::join(parts, ", "));
}

nlohmann::json tokenizer_json(const TokenizerArgs& t) {
  nlohmann::json j{{"tokenizer_type", t.tokenizer_type}};
  if (t.vocab_file) j["vocab_file"] = *t.vocab_file;
  if (t.merge_file) j["merge_file"] = *t.merge_file;
  if (t.tokenizer_model) j["tokenizer_model"] = *t.tokenizer_model;
  if (t.vocab_size) j["vocab_size"] = *t.vocab_size;
  return j;
}

}  // namespace

void check_checkpoint_vocabulary(const checkpoint::Checkpoint& ck, const TokenizerArgs& run, int64_t vocab_size,
                                 int64_t padded_vocab_size) {
  const nlohmann::json& m = ck.metadata().model;
  if (!m.is_object() || !m.contains("vocab_size") || !m["vocab_size"].is_number_integer()) return;
  const int64_t saved = m["vocab_size"].get<int64_t>();
  if (saved == vocab_size) return;
  const bool padded_known = m.contains("padded_vocab_size") && m["padded_vocab_size"].is_number_integer();
  const std::string saved_padded =
      padded_known ? fmt::format(" (padded to {})", m["padded_vocab_size"].get<int64_t>()) : std::string();
  const std::string saved_type = m.contains("tokenizer_type") && m["tokenizer_type"].is_string()
                                     ? m["tokenizer_type"].get<std::string>()
                                     : std::string("a tokenizer it does not name");
  // A checkpoint whose vocabulary is itself a padded size, as a Hugging Face config.json may give it
  // (Pythia's 50304 rows for a 50277-token tokenizer), ends in padding rows: a run whose tokenizer is smaller
  // but pads to the same table drops no trained row.
  if (padded_known && saved == m["padded_vocab_size"].get<int64_t>() && vocab_size < saved &&
      saved <= padded_vocab_size) {
    log::warn(
        "--load {}: the checkpoint's vocabulary is its padded size, {} rows; this run's tokenizer has {} tokens "
        "(padded to {}): rows {} to {} are taken as padding. Loading it",
        ck.dir(), saved, vocab_size, padded_vocab_size, vocab_size, saved - 1);
    return;
  }
  fail(
      "--load {}: the checkpoint's vocabulary of {} tokens{}, tokenizer {}, is not this run's vocabulary of {} "
      "tokens (padded to {}), tokenizer {}: its embedding and output rows belong to other tokens. Give the "
      "saving run's tokenizer flags (a vocabulary of another size is refused, with --finetune too, as Megatron "
      "refuses the shape)",
      ck.dir(), saved, saved_padded, tokenizer_text(ck.metadata().args, saved_type), vocab_size, padded_vocab_size,
      tokenizer_text(tokenizer_json(run), run.tokenizer_type));
}

}  // namespace gptrain
