// Family / model_type -> adapter.
#include "core/common/error.h"
#include "core/hf/adapter.h"
#include "core/safetensors/reader.h"

namespace gptrain::hf {

namespace {
std::vector<const Adapter*> all_adapters() {
  return {&gpt2_adapter(),    &llama_adapter(),     &gpt_neox_adapter(),  &gptj_adapter(),
          &mixtral_adapter(), &qwen2_adapter(),     &qwen2_moe_adapter(), &mistral_adapter(),
          &qwen3_adapter(),   &qwen3_moe_adapter(), &gemma_adapter()};
}

std::string supported(bool by_family) {
  std::string s;
  for (const Adapter* a : all_adapters())
    s += (s.empty() ? "" : ", ") + std::string(by_family ? a->family() : a->model_type());
  return s;
}
}  // namespace

const Adapter& adapter_for_family(const std::string& family) {
  for (const Adapter* a : all_adapters())
    if (family == a->family()) return *a;
  fail("model family \"{}\" has no Hugging Face adapter (supported: {})", family, supported(true));
}

const Adapter& adapter_for_model_type(const std::string& model_type) {
  for (const Adapter* a : all_adapters())
    if (model_type == a->model_type()) return *a;
  if (model_type == "gemma2")
    fail(
        "config.json model_type \"gemma2\" is not supported: Gemma 2 adds attention and final logit soft-capping, "
        "sliding-window attention on alternating layers, extra norms after attention and around the MLP, and "
        "query_pre_attn_scalar, which gptrain does not implement (Gemma 1, model_type \"gemma\", is supported)");
  fail("config.json model_type \"{}\" is not supported (supported: {})", model_type, supported(false));
}

std::vector<float> TensorStore::read_checked_padded(const std::string& name, const std::vector<int64_t>& shape,
                                                    int64_t rows_to) const {
  int64_t inner = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) inner *= shape[i];
  read_checked_shape(name, shape);
  std::vector<float> out(static_cast<std::size_t>(rows_to * inner), 0.0f);
  read_to(name, out.data(), static_cast<std::size_t>(shape[0] * inner));
  return out;
}

std::vector<float> TensorStore::read_checked(const std::string& name, const std::vector<int64_t>& want) const {
  read_checked_shape(name, want);
  return read(name);
}

void TensorStore::read_checked_shape(const std::string& name, const std::vector<int64_t>& want) const {
  if (!has(name)) fail("{}: tensor \"{}\" is missing", where(), name);
  const auto got = shape(name);
  if (got != want) {
    fail("{}: tensor \"{}\" has shape {}, expected {} from the config", where(), name, safetensors::shape_string(got),
         safetensors::shape_string(want));
  }
}

}  // namespace gptrain::hf
