#include "core/checkpoint/stage_weights.h"

#include "core/common/error.h"

namespace gptrain::checkpoint {

std::optional<Slice> param_slice(const ParamTensor& t) {
  if (!t.sharded()) return std::nullopt;
  Slice s{t.global_shape, {}};
  for (const auto& b : t.blocks) s.blocks.push_back({b.dim, b.global_offset, b.length});
  return s;
}

void load_stage_parameters(GptStage& stage, const Checkpoint& ck) {
  const auto& layout = stage.layout();
  // Check names first so a wrong checkpoint fails with the full list, before any upload.
  std::vector<std::string> missing;
  for (const auto& t : layout.tensors)
    if (!ck.has(Checkpoint::Kind::model, t.name)) missing.push_back(t.name);
  if (!missing.empty())
    fail("{}: the checkpoint lacks {} tensor(s) this model needs, e.g. \"{}\" (a checkpoint of another model shape or family?)",
         ck.dir(), missing.size(), missing.front());
  const int vocab = stage.config().vocab_size;
  stage.set_parameters([&ck, vocab](const ParamTensor& t, float* out) {
    const bool vocab_rows = t.name == "embedding.word_embeddings.weight" || t.name == "output_layer.weight" || t.name == "output_layer.bias";
    ck.read_into(Checkpoint::Kind::model, {t.name, t.local_shape, out, param_slice(t)}, vocab_rows ? vocab : -1);
  });
}

}  // namespace gptrain::checkpoint
