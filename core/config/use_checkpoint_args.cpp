#include "core/config/use_checkpoint_args.h"

#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"

#include <fmt/format.h>

#include <filesystem>

namespace gptrain {

namespace {

// Megatron's _set_arg calls, in its order, as gptrain flags; force: taken over an explicit flag.
struct Taken {
  const char* flag;
  bool force;
};
constexpr Taken kTaken[] = {
    {"num-layers", false},
    {"hidden-size", false},
    {"ffn-hidden-size", false},
    {"seq-length", false},
    {"num-attention-heads", false},
    {"num-query-groups", true},
    {"group-query-attention", true},
    {"kv-channels", false},
    {"max-position-embeddings", false},
    {"position-embedding-type", true},
    {"use-rotary-position-embeddings", true},
    {"rotary-base", true},
    {"rotary-percent", true},
    {"rotary-interleaved", true},
    {"disable-bias-linear", true},  // Megatron's add_bias_linear
    {"add-qkv-bias", true},
    {"swiglu", true},
    {"untie-embeddings-and-output-weights", true},
    {"apply-layernorm-1p", true},
    {"normalization", true},
    {"attention-dropout", true},
    {"hidden-dropout", true},
    {"num-experts", true},
    {"moe-layer-freq", true},
    {"moe-ffn-hidden-size", true},
    {"moe-router-topk", true},
    {"moe-token-dispatcher-type", false},
    {"moe-router-pre-softmax", true},
    {"moe-shared-expert-intermediate-size", true},
    {"moe-router-score-function", true},
    {"moe-router-topk-scaling-factor", true},
    {"tokenizer-model", true},  // Megatron's default --use-tokenizer-model-from-checkpoint-args
    {"tokenizer-type", true},
    {"tiktoken-pattern", true},
    {"vocab-size", false},  // with the next: gptrain's padded vocabulary (Megatron's padded_vocab_size)
    {"make-vocab-size-divisible-by", false},
};

std::string underscores(std::string s) {
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

// The flag's command-line values for a recorded JSON value; empty for null (not recorded).
std::vector<std::string> values_of(const nlohmann::json& v) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_array()) {
    for (const auto& e : v) out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  } else if (v.is_boolean()) {
    out.push_back(v.get<bool>() ? "true" : "false");
  } else {
    out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// The value as Megatron's line prints it (Python's str: True / False for booleans, lists in brackets).
std::string python_str(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v)
      s += (s.empty() ? "" : ", ") + (e.is_string() ? "'" + e.get<std::string>() + "'" : python_str(e));
    return "[" + s + "]";
  }
  return v.dump();
}

std::string shown(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return v.size() == 1 ? s : "[" + s + "]";
}

}  // namespace

std::optional<nlohmann::json> recorded_checkpoint_args(const std::string& load_dir, std::optional<int64_t> ckpt_step,
                                                       std::string* checkpoint_dir) {
  std::optional<checkpoint::Step> step;
  if (ckpt_step)
    step = checkpoint::Step::at(*ckpt_step);
  else
    step = checkpoint::read_tracker(load_dir);
  if (!step) return std::nullopt;
  const std::string dir = (std::filesystem::path(load_dir) / step->dir_name()).string();
  if (checkpoint_dir) *checkpoint_dir = dir;
  const checkpoint::Metadata meta = checkpoint::read_metadata(dir);
  if (!meta.args.is_object() || meta.args.empty()) return std::nullopt;
  return meta.args;
}

std::vector<std::string> apply_checkpoint_args(FlagTable& t, const nlohmann::json& recorded, const std::string& where,
                                               std::vector<std::string>& overridden) {
  std::vector<std::string> lines;
  for (const Taken& k : kTaken) {
    if (!k.force && t.given(k.flag)) continue;
    const FlagTable::Flag* f = nullptr;
    for (const auto& x : t.flags())
      if (x.name == k.flag && x.status == FlagTable::Status::Bound) f = &x;
    check(f != nullptr, "internal: --use-checkpoint-args takes --{}, which is not a bound flag", k.flag);
    const std::string key = underscores(k.flag);
    const std::vector<std::string> vals =
        recorded.contains(key) ? values_of(recorded.at(key)) : std::vector<std::string>{};
    if (vals.empty()) {
      lines.push_back(fmt::format("Checkpoint did not provide arguments {}", key));
      continue;
    }
    const nlohmann::json before = f->get();
    f->set(vals, where);
    if (k.force && t.given(k.flag) && f->get() != before)
      overridden.push_back(fmt::format("--{} {} (the checkpoint's {})", k.flag, shown(values_of(before)), shown(vals)));
    lines.push_back(fmt::format("Setting {} to {} from checkpoint", key, python_str(recorded.at(key))));
  }
  return lines;
}

}  // namespace gptrain
