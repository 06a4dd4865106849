// The Hugging Face family of a gptrain checkpoint: which adapter (adapter.h) converts it, recorded in the
// checkpoint's metadata as "family". It is chosen here, not guessed by the model: a run started from flags
// records the family its switches describe (default_family); a conversion from Hugging Face records the
// model_type's family, and a run that loads a checkpoint keeps the family it came with, so two families
// whose switches coincide stay apart through training.
#pragma once

#include "core/checkpoint/model_json.h"

#include <string>

namespace gptrain::hf {

// The family a configuration's switches describe: "gemma" (GeGLU or embeddings scaled by sqrt(hidden)), "qwen3" /
// "qwen3_moe" (--qk-layernorm with RMSNorm and SwiGLU), "gptj" (shared-norm parallel residual), "gpt_neox" (two-norm
// parallel residual), "qwen2" (RMSNorm, SwiGLU and a QKV-only bias), "mistral" (RMSNorm, SwiGLU and a sliding window
// on every layer), "llama" (RMSNorm or SwiGLU), else "gpt2"; with MoE layers "qwen2_moe" (RMSNorm, SwiGLU, a QKV-only
// bias and a gated shared expert), "mixtral" (RMSNorm, SwiGLU, no shared expert) or "moe", which converts to no
// Hugging Face family.
std::string default_family(const ModelConfig& c);

// The family a checkpoint's metadata records, or default_family of its switches when it records none (a
// checkpoint written before the field existed).
std::string family_of(const checkpoint::ModelDescription& m);

}  // namespace gptrain::hf
