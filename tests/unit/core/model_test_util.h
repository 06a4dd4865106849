// Helpers shared by the model tests: tiny configs, deterministic random micro-batches, and
// host-side access to a stage's flat parameter / gradient buffers.
#pragma once

#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "kernels/backend.h"

#include <cstdint>
#include <random>
#include <vector>

namespace gptrain::test {

// The switches that make a config one family's layer (callers set the sizes: ffn, query groups, ...).
inline void use_llama_switches(ModelConfig& c) {  // RMSNorm, rope, SwiGLU, no biases, untied
  c.normalization = Normalization::RMSNorm;
  c.position_embedding = PositionEmbedding::Rope;
  c.swiglu = true;
  c.add_bias_linear = false;
  c.untie_embeddings_and_output_weights = true;
}

inline void use_neox_switches(ModelConfig& c) {  // two norms, partial rope, erf GELU, qkv bias only
  c.parallel_residual = ParallelResidual::TwoNorms;
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_percent = 0.5f;
  c.gelu = GeluKind::Erf;
  c.add_bias_linear = false;
  c.add_qkv_bias = true;
}

inline void use_gptj_switches(ModelConfig& c) {  // shared norm, interleaved partial rope, lm_head bias
  c.parallel_residual = ParallelResidual::SharedNorm;
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_interleaved = true;
  c.rotary_percent = 0.5f;
  c.untie_embeddings_and_output_weights = true;
  c.output_layer_bias = true;
}

// A tiny GPT-2-style config with dropout on and large init (so every op matters to the gradients).
inline ModelConfig tiny_dropout_config(int layers) {
  ModelConfig c;
  c.num_layers = layers;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 8;
  c.micro_batch_size = 2;
  c.vocab_size = 45;
  c.init_method_std = 0.2f;
  c.hidden_dropout = 0.1f;
  c.attention_dropout = 0.1f;
  return c;
}

inline HostMicroBatch random_batch(const ModelConfig& c, uint64_t seed, bool mask_some = true) {
  std::mt19937_64 rng(seed);
  const int N = c.micro_batch_size * c.seq_length;
  HostMicroBatch mb;
  mb.tokens.resize(N), mb.labels.resize(N), mb.loss_mask.resize(N), mb.position_ids.resize(N);
  for (int i = 0; i < N; ++i) {
    mb.tokens[i] = int32_t(rng() % c.vocab_size);
    mb.labels[i] = int32_t(rng() % c.vocab_size);
    mb.loss_mask[i] = (mask_some && rng() % 5 == 0) ? 0.0f : 1.0f;
    mb.position_ids[i] = i % c.seq_length;
  }
  mb.dropout_seed = seed * 7 + 1;
  return mb;
}

inline std::vector<float> to_host(Backend& be, const void* p, std::size_t n) {
  std::vector<float> v(n);
  be.copy_to_host(v.data(), p, n * sizeof(float));
  return v;
}

// Mean loss over the unmasked tokens of one micro-batch (forward only).
inline double mean_loss(GptStage& m, StageActivations& a, bool train) {
  m.forward(a, nullptr, train);
  const auto s = m.loss_sum(a);
  return s.loss_sum / s.num_tokens;
}

}  // namespace gptrain::test
