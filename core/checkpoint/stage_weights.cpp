#include "core/checkpoint/stage_weights.h"

#include "core/checkpoint/model_json.h"
#include "core/common/error.h"

namespace gptrain::checkpoint {

std::optional<Slice> param_slice(const ParamTensor& t) {
  if (!t.sharded()) return std::nullopt;
  Slice s{t.global_shape, {}};
  for (const auto& b : t.blocks) s.blocks.push_back({b.dim, b.global_offset, b.length});
  return s;
}

void check_model_tensors(const Checkpoint& ck, const ModelConfig& stage_config) {
  ModelConfig whole = stage_config;
  whole.tp_size = 1, whole.tp_rank = 0, whole.sequence_parallel = false;
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
}

void load_stage_parameters(GptStage& stage, const Checkpoint& ck) {
  check_model_tensors(ck, stage.config());
  const int vocab = stage.config().vocab_size;
  stage.set_parameters([&ck, vocab](const ParamTensor& t, float* out) {
    const bool vocab_rows = t.name == "embedding.word_embeddings.weight" || t.name == "output_layer.weight" ||
                            t.name == "output_layer.bias";
    ck.read_into(Checkpoint::Kind::model, {t.name, t.local_shape, out, param_slice(t)}, vocab_rows ? vocab : -1);
  });
}

}  // namespace gptrain::checkpoint
