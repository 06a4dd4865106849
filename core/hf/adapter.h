// Hugging Face adapters: one per model family (gpt2_adapter.cpp, llama_adapter.cpp, ...), each the
// single owner of that family's key map, transposes, QKV layouts and RoPE permutations, in both
// directions. An adapter never holds a whole model: it returns a list of output tensors, each with
// a function that reads just the source tensors it needs, so converters stream one tensor at a time.
#pragma once

#include "core/checkpoint/model_json.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace gptrain::hf {

// Whole fp32 tensors by name: a gptrain checkpoint (global names) or a HF weight set.
class TensorStore {
 public:
  virtual ~TensorStore() = default;
  virtual bool has(const std::string& name) const = 0;
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  virtual std::vector<float> read(const std::string& name) const = 0;
  virtual void read_to(const std::string& name, float* dst, std::size_t n) const = 0;  // n == numel
  virtual std::vector<std::string> names() const = 0;
  virtual std::string where() const = 0;  // for messages: the directory
  // read() after checking the tensor exists with exactly `shape`; errors name store, tensor, shapes.
  std::vector<float> read_checked(const std::string& name, const std::vector<int64_t>& shape) const;
  // read_checked of a (rows, cols...) tensor into a buffer of rows_to >= rows rows, the extra rows
  // zero (vocabulary padding) -- one allocation, no second copy of a large embedding.
  std::vector<float> read_checked_padded(const std::string& name, const std::vector<int64_t>& shape,
                                         int64_t rows_to) const;
  void read_checked_shape(const std::string& name, const std::vector<int64_t>& shape) const;  // throws on mismatch
};

struct OutTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::function<std::vector<float>()> produce;  // numel(shape) values
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual const char* family() const = 0;      // gptrain metadata "family"
  virtual const char* model_type() const = 0;  // HF config "model_type"

  // ---- gptrain -> HF ----
  // config.json without torch_dtype (the converter adds it). Throws when the gptrain model uses a
  // switch this HF architecture cannot express.
  virtual nlohmann::json hf_config(const checkpoint::ModelDescription& m) const = 0;
  virtual std::vector<OutTensor> to_hf(const checkpoint::ModelDescription& m, const TensorStore& ckpt) const = 0;

  // ---- HF -> gptrain ----
  // Architecture from config.json (vocab_size = the HF vocab; the caller pads and finalizes).
  virtual checkpoint::ModelDescription from_hf_config(const nlohmann::json& config, const std::string& where) const = 0;
  // `m` is finalized (padded_vocab_size set). Output names are gptrain global names.
  virtual std::vector<OutTensor> from_hf(const checkpoint::ModelDescription& m, const TensorStore& hf) const = 0;
  // HF tensors a converter may leave unread (non-persistent buffers saved by old transformers,
  // a tied lm_head.weight). Any other unread tensor is an error: the model has parts we would drop.
  virtual bool ignorable_hf_tensor(const std::string& name, const checkpoint::ModelDescription& m) const = 0;
  // What the family's HF norm weights store: gamma - this. 0 for most (HF stores gamma), 1 for Gemma (its norms
  // scale by 1 + w). The converters move norm weights between it and the checkpoint's own offset (1 with
  // --apply-layernorm-1p, else 0), so adapters copy norm weights as they are.
  virtual float hf_norm_weight_offset() const { return 0.0f; }
};

// By gptrain family ("gpt2", ...) or HF model_type; errors list the supported ones.
const Adapter& adapter_for_family(const std::string& family);
const Adapter& adapter_for_model_type(const std::string& model_type);

// Factories, one per adapter file.
const Adapter& gpt2_adapter();
const Adapter& llama_adapter();
const Adapter& gpt_neox_adapter();
const Adapter& gptj_adapter();
const Adapter& mixtral_adapter();
const Adapter& qwen2_adapter();
const Adapter& qwen2_moe_adapter();
const Adapter& mistral_adapter();
const Adapter& qwen3_adapter();      // qwen3_adapter.cpp
const Adapter& qwen3_moe_adapter();  // qwen3_adapter.cpp
const Adapter& gemma_adapter();

}  // namespace gptrain::hf
