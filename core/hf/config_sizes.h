// The sizes a Hugging Face config.json gives (layers, heads, widths, vocabulary, positions, experts) are
// read through cfg_size: an integer from 0 to a maximum far beyond any published model. A damaged config
// is refused with its key before anything is sized by it (a per-layer list of 2^31 entries, a tensor of
// 2^40 rows), and with every size within its maximum no product of sizes the conversion forms overflows:
// a tensor's elements, a layer's, the model's (int64), a layer's qkv width (int). 0 is left to the model's
// own checks, which name it.
#pragma once

#include "core/hf/adapter_util.h"

#include <cstdint>
#include <limits>

namespace gptrain::hf::max_size {

constexpr int64_t layers = 4096;
constexpr int64_t hidden = int64_t(1) << 17;     // hidden size, MLP width / 8
constexpr int64_t ffn = int64_t(1) << 20;        // MLP width
constexpr int64_t heads = 4096;                  // attention heads, key-value heads
constexpr int64_t head_dim = 4096;               // head size, rotary dims
constexpr int64_t vocab = int64_t(1) << 24;      // vocabulary
constexpr int64_t positions = int64_t(1) << 24;  // position embeddings (sequence length)
constexpr int64_t experts = 1024;                // experts, experts per token

// The largest products the conversion and the model form from these sizes.
static_assert(vocab * hidden < (int64_t(1) << 42), "embedding elements");
static_assert(positions * hidden < (int64_t(1) << 42), "position embedding elements");
static_assert(experts * 2 * ffn * hidden < (int64_t(1) << 51), "an MoE layer's expert elements");
static_assert(layers * (experts * 3 * ffn * hidden + 4 * heads * head_dim * hidden) <
                  std::numeric_limits<int64_t>::max() / 4,
              "the model's elements, and their bytes");
static_assert(3 * heads * head_dim < std::numeric_limits<int>::max(), "a layer's qkv width");

}  // namespace gptrain::hf::max_size

namespace gptrain::hf {

// A size from config.json: required, or `fallback` when absent; an integer in [0, max].
inline int cfg_size(const nlohmann::json& j, const char* key, const std::string& where, int64_t max) {
  const int64_t v = cfg<int64_t>(j, key, where);
  if (v < 0 || v > max) fail("{}: \"{}\" is {}, expected 0 to {}", where, key, v, max);
  return static_cast<int>(v);
}
inline int cfg_size(const nlohmann::json& j, const char* key, const std::string& where, int64_t max, int fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return cfg_size(j, key, where, max);
}

}  // namespace gptrain::hf
