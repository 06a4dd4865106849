#include "core/checkpoint/stage_weights.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain::checkpoint {

std::optional<Slice> param_slice(const ParamTensor& t) {
  if (!t.sharded()) return std::nullopt;
  Slice s{t.global_shape, {}};
  for (const auto& b : t.blocks) s.blocks.push_back({b.dim, b.global_offset, b.length});
  return s;
}

void load_stage_parameters(GptStage& stage, const Checkpoint& ck) {
  Backend& be = stage.backend();
  const DType dt = be.compute_dtype();
  const auto& layout = stage.layout();
  std::vector<float> host;
  float* staging = dt == DType::F32 ? nullptr : static_cast<float*>(be.alloc(std::max<std::size_t>(layout.total, 1) * 4));
  // Check names first so a wrong checkpoint fails with the full list, before any upload.
  std::vector<std::string> missing;
  for (const auto& t : layout.tensors)
    if (!ck.has(Checkpoint::Kind::model, t.name)) missing.push_back(t.name);
  if (!missing.empty())
    fail("{}: the checkpoint lacks {} tensor(s) this model needs, e.g. \"{}\" (a checkpoint of another model shape or family?)",
         ck.dir(), missing.size(), missing.front());
  for (const auto& t : layout.tensors) {
    host.resize(t.numel);
    const bool vocab_rows = t.name == "embedding.word_embeddings.weight" || t.name == "output_layer.weight" || t.name == "output_layer.bias";
    ck.read_into(Checkpoint::Kind::model, {t.name, t.local_shape, host.data(), param_slice(t)},
                 vocab_rows ? stage.config().vocab_size : -1);
    void* dst = static_cast<char*>(stage.params()) + t.offset * dtype_size(dt);
    if (dt == DType::F32) {
      be.copy_to_device(dst, host.data(), t.numel * 4);
    } else {
      be.copy_to_device(staging + t.offset, host.data(), t.numel * 4);
      be.convert(dst, dt, staging + t.offset, DType::F32, t.numel);
    }
  }
  if (staging) be.release(staging);
  be.synchronize();
}

}  // namespace gptrain::checkpoint
