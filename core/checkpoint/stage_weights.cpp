#include "core/checkpoint/stage_weights.h"

#include "core/checkpoint/model_json.h"
#include "core/common/error.h"
#include "core/common/log.h"

#include <algorithm>

#include <fmt/ranges.h>

namespace gptrain::checkpoint {

namespace {

// The flags that give a run this Llama-3 RoPE scaling.
std::string rope_scaling_flags(const RopeScaling& s) {
  return fmt::format(
      "--use-rope-scaling --rope-scaling-factor {} --rope-scaling-low-freq-factor {} --rope-scaling-high-freq-factor "
      "{} --rope-scaling-original-max-position-embeddings {}",
      s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_positions);
}

bool same_rope_scaling(const RopeScaling& a, const RopeScaling& b) {
  return a.llama3 == b.llama3 && (!a.llama3 || (a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
                                                a.high_freq_factor == b.high_freq_factor &&
                                                a.original_max_positions == b.original_max_positions));
}

}  // namespace

bool is_vocab_padded(const std::string& name) {
  for (const char* v : {"embedding.word_embeddings.weight", "output_layer.weight", "output_layer.bias"})
    if (name.ends_with(v)) return true;  // also an optimizer moment's "exp_avg.<name>"
  return false;
}

std::optional<Slice> param_slice(const ParamTensor& t) {
  if (!t.sharded()) return std::nullopt;
  Slice s{t.global_shape, {}};
  for (const auto& b : t.blocks) s.blocks.push_back({b.dim, b.global_offset, b.length});
  return s;
}

void check_model_tensors(const Checkpoint& ck, const StageConfig& stage_config) {
  StageConfig whole = stage_config;
  whole.tp_size = 1, whole.tp_rank = 0, whole.sequence_parallel = false;
  whole.ep_size = 1, whole.ep_rank = 0, whole.etp_size = 1, whole.etp_rank = 0;
  whole.layer_first = 0, whole.layer_last = -1, whole.has_embedding = whole.has_head = true;
  whole.finalize(1);
  const ParamLayout layout = build_param_layout(whole);
  auto hint = [&] {
    const std::string diff = model_differences(ck.metadata().model, whole);
    return diff.empty() ? std::string("a checkpoint of another model shape or family?")
                        : "its model differs from this run's flags: " + diff;
  };
  // Names first, so a wrong checkpoint fails with the full picture before any upload.
  std::vector<std::string> missing;
  for (const auto& t : layout.tensors)
    if (!ck.has(Checkpoint::Kind::model, t.name)) missing.push_back(t.name);
  if (!missing.empty())
    fail("{}: the checkpoint lacks {} tensor(s) this model needs, e.g. \"{}\" ({})", ck.dir(), missing.size(),
         missing.front(), hint());
  for (const auto& n : ck.names(Checkpoint::Kind::model))
    if (!layout.find(n))
      fail("{}: the checkpoint holds \"{}\", which this model has no place for ({})", ck.dir(), n, hint());
  for (const auto& t : layout.tensors) {
    const std::vector<int64_t> have = ck.global_shape(Checkpoint::Kind::model, t.name);
    std::vector<int64_t> want = t.global_shape;
    // Vocabulary rows: any padding of at least the real rows (whole.finalize(1) leaves them unpadded).
    if (is_vocab_padded(t.name) && have.size() == want.size() && !have.empty() && have[0] >= want[0]) want[0] = have[0];
    if (have != want)
      fail("{}: tensor \"{}\" has shape ({}) in the checkpoint but the model expects ({}) ({})", ck.dir(), t.name,
           fmt::join(have, ", "), fmt::join(want, ", "), hint());
  }
  // What the norm weights mean (gamma, or gamma - 1) shows in no name or shape: compare the switch itself.
  const auto& m = ck.metadata().model;
  const bool ck_1p = m.is_object() && m.contains("apply_layernorm_1p") && m["apply_layernorm_1p"].is_boolean() &&
                     m["apply_layernorm_1p"].get<bool>();
  if (ck_1p && !whole.apply_layernorm_1p)
    fail(
        "{}: the checkpoint stores its norm weights as gamma - 1 (apply_layernorm_1p); give --apply-layernorm-1p as "
        "the saving run did",
        ck.dir());
  if (!ck_1p && whole.apply_layernorm_1p)
    fail(
        "{}: the checkpoint stores its norm weights as gamma (no apply_layernorm_1p), this run has "
        "--apply-layernorm-1p; drop the flag, or rewrite the checkpoint (convert_to_hf, then convert_from_hf "
        "--apply-layernorm-1p)",
        ck.dir());
  // Nor do the rotary frequencies: weights trained with Llama-3 scaling load only into a run with the same
  // scaling. A checkpoint without it may take one (fine-tuning for a longer context, as Llama-3.1 was made).
  if (m.is_object() && m.contains("rope_scaling") && !m["rope_scaling"].is_null()) {
    const RopeScaling ck_scaling = model_from_json(m, ck.dir()).config.rope_scaling;
    if (!same_rope_scaling(ck_scaling, whole.rope_scaling))
      fail("{}: the checkpoint's RoPE has Llama-3 scaling ({}) and this run {}; give the checkpoint's flags", ck.dir(),
           rope_scaling_flags(ck_scaling),
           whole.rope_scaling.llama3 ? "has " + rope_scaling_flags(whole.rope_scaling) : std::string("has none"));
  }
  // Linear interpolation and YaRN likewise: recorded ones must be the run's (a checkpoint without may take one).
  const nlohmann::json run_model = model_to_json({"", "", whole});
  const struct {
    const char* key;
    std::string flags;
  } rope_modes[] = {
      {"rotary_seq_len_interpolation_factor", "--rotary-seq-len-interpolation-factor"},
      {"yarn",
       "--position-embedding-type yarn with --rotary-scaling-factor, --yarn-original-max-position-embeddings, "
       "--yarn-beta-fast, --yarn-beta-slow, --[no-]yarn-correction-range-round-to-int, --mscale, --mscale-all-dim"}};
  for (const auto& mode : rope_modes)
    if (m.is_object() && m.contains(mode.key) && !m[mode.key].is_null() && m[mode.key] != run_model[mode.key])
      fail("{}: the checkpoint's RoPE has {} {} and this run {}; give the checkpoint's values ({})", ck.dir(), mode.key,
           m[mode.key].dump(), run_model[mode.key].is_null() ? "has none" : "has " + run_model[mode.key].dump(),
           mode.flags);
  // Neither does the attention window (absent in checkpoints written before it existed: none).
  auto recorded_int = [&](const char* key, int absent) {
    return m.is_object() && m.contains(key) && m[key].is_number_integer() ? m[key].get<int>() : absent;
  };
  const int ck_window = recorded_int("window_size", -1), ck_skip = recorded_int("window_attn_skip_freq", 0);
  if (ck_window != whole.window_size || ck_skip != whole.window_attn_skip_freq)
    fail(
        "{}: the checkpoint's model was trained with window_size {} and window_attn_skip_freq {} (-1 and 0: no "
        "sliding window), this run has {} and {}; give --window-size {},0{} as the saving run did",
        ck.dir(), ck_window, ck_skip, whole.window_size, whole.window_attn_skip_freq, ck_window,
        ck_skip ? fmt::format(" --window-attn-skip-freq {}", ck_skip) : std::string());
  // Gemma's switches and --squared-relu change the maths without a name or shape (GeGLU's fc1 is SwiGLU's,
  // squared ReLU's GELU's): the run must have
  // the checkpoint's (absent: false, a checkpoint written before they existed).
  const struct {
    const char* key;
    const char* flag;
    bool run;
  } same_shape_switches[] = {
      {"geglu", "--geglu", whole.geglu},
      {"qk_l2_norm", "--qk-l2-norm", whole.qk_l2_norm},
      {"scale_embeddings_by_sqrt_hidden", "--scale-embeddings-by-sqrt-hidden", whole.scale_embeddings_by_sqrt_hidden},
      {"squared_relu", "--squared-relu", whole.squared_relu}};
  for (const auto& sw : same_shape_switches) {
    const bool saved = m.is_object() && m.contains(sw.key) && m[sw.key].is_boolean() && m[sw.key].get<bool>();
    if (saved && !sw.run)
      fail("{}: the checkpoint's model has {} true; give {} as the saving run did", ck.dir(), sw.key, sw.flag);
    if (!saved && sw.run)
      fail("{}: the checkpoint's model has {} false, this run has {}; drop the flag", ck.dir(), sw.key, sw.flag);
  }
}

void check_upcycling_source(const Checkpoint& ck, const StageConfig& moe_model) {
  const nlohmann::json& m = ck.metadata().model;
  if (m.is_object() && m.contains("moe") && !m["moe"].is_null())
    fail(
        "--moe-use-upcycling: {} is a mixture-of-experts checkpoint; upcycling starts from a dense one (drop "
        "--moe-use-upcycling to resume an MoE checkpoint)",
        ck.dir());
  StageConfig dense = moe_model;
  dense.moe = MoeConfig{};
  check_model_tensors(ck, dense);
}

void check_optimizer_state(const Checkpoint& ck, bool load_optim) {
  if (!load_optim) return;
  if (const auto missing = ck.missing_optimizer_files())
    fail(
        "{}: the checkpoint is damaged: {}; --ckpt-fallback-to-intact loads the newest earlier checkpoint that "
        "passes its checks, --no-load-optim starts the optimizer fresh from these weights",
        ck.dir(), *missing);
  check(ck.has_optim(),
        "{}: the checkpoint has no optimizer state (saved with --no-save-optim?); pass --no-load-optim or "
        "--finetune to start the optimizer fresh",
        ck.dir());
}

void load_stage_parameters(GptStage& stage, const Checkpoint& ck) {
  check_model_tensors(ck, stage.config());
  const int vocab = stage.config().vocab_size;
  stage.set_parameters([&ck, vocab](const ParamTensor& t, float* out) {
    ck.read_into(Checkpoint::Kind::model, {t.name, t.local_shape, out, param_slice(t)},
                 is_vocab_padded(t.name) ? vocab : -1);
  });
}

nlohmann::json expert_bias_to_json(const std::vector<float>& bias, const MoeConfig& m) {
  const std::size_t E = std::size_t(m.num_experts);
  nlohmann::json layers = nlohmann::json::object();
  for (std::size_t l = 0; l * E < bias.size(); ++l)
    if (m.is_moe_layer(int(l)))
      layers[std::to_string(l)] = std::vector<float>(bias.begin() + l * E, bias.begin() + (l + 1) * E);
  return layers;
}

std::vector<float> read_expert_bias(const Checkpoint& ck, const ModelConfig& c) {
  const nlohmann::json& saved = ck.metadata().moe_router;
  const bool has = saved.is_object() && saved.contains("expert_bias");
  if (!c.moe.expert_bias) {
    if (has)
      fail(
          "{}: the checkpoint's routers have an expert bias; give --moe-router-enable-expert-bias (and "
          "--moe-router-score-function sigmoid) as the saving run did",
          ck.dir());
    return {};
  }
  const std::size_t E = std::size_t(c.moe.num_experts);
  std::vector<float> bias(std::size_t(c.num_layers) * E, 0.0f);
  if (!has) {
    log::info("{}: the checkpoint has no expert bias; the routers start from a zero bias", ck.dir());
    return bias;
  }
  const nlohmann::json& layers = saved.at("expert_bias");
  for (int l = 0; l < c.num_layers; ++l) {
    if (!c.moe.is_moe_layer(l)) continue;
    const std::string key = std::to_string(l);
    const bool ok =
        layers.is_object() && layers.contains(key) && layers.at(key).is_array() && layers.at(key).size() == E &&
        std::all_of(layers.at(key).begin(), layers.at(key).end(), [](const auto& v) { return v.is_number(); });
    if (!ok)
      fail("{}/metadata.json: moe_router.expert_bias.\"{}\" must be a list of {} numbers (MoE layer {}'s experts)",
           ck.dir(), key, E, l);
    for (std::size_t e = 0; e < E; ++e) bias[std::size_t(l) * E + e] = layers.at(key)[e].get<float>();
  }
  return bias;
}

}  // namespace gptrain::checkpoint
