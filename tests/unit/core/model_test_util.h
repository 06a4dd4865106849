// Helpers shared by the model tests: tiny configs, deterministic random micro-batches, and
// host-side access to a stage's flat parameter / gradient buffers.
#pragma once

#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "kernels/backend.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

namespace gptrain::test {

// The switches that make a config one family's layer (callers set the sizes: ffn, query groups, ...).
inline void use_llama_switches(StageConfig& c) {  // RMSNorm, rope, SwiGLU, no biases, untied
  c.normalization = Normalization::RMSNorm;
  c.position_embedding = PositionEmbedding::Rope;
  c.swiglu = true;
  c.add_bias_linear = false;
  c.untie_embeddings_and_output_weights = true;
}

inline void use_neox_switches(StageConfig& c) {  // two norms, partial rope, erf GELU, qkv bias only
  c.parallel_residual = ParallelResidual::TwoNorms;
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_percent = 0.5f;
  c.gelu = GeluKind::Erf;
  c.add_bias_linear = false;
  c.add_qkv_bias = true;
}

inline void use_gptj_switches(StageConfig& c) {  // shared norm, interleaved partial rope, lm_head bias
  c.parallel_residual = ParallelResidual::SharedNorm;
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_interleaved = true;
  c.rotary_percent = 0.5f;
  c.untie_embeddings_and_output_weights = true;
  c.output_layer_bias = true;
}

// A tiny GPT-2-style config with dropout on and large init (so every op matters to the gradients).
inline StageConfig tiny_dropout_config(int layers) {
  StageConfig c;
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

inline HostMicroBatch random_batch(const StageConfig& c, uint64_t seed, bool mask_some = true) {
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

// Full recomputation with method m and N = n (recompute.h).
inline RecomputeConfig full_recompute(RecomputeMethod m, int n) {
  RecomputeConfig r;
  r.granularity = RecomputeGranularity::Full;
  r.method = m;
  r.num_layers = n;
  return r;
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Several micro-batches in flight on the fp32 CPU backend: every forward (micro-batch k from
// random_batch(seed 11 + k)), then `between` (may be empty), then the backwards in reverse order, through
// the stages of c split after layer `split` (0: one stage). For the tests of what forward keeps for
// backward (recomputation, offloading): later forwards overwrite what the stages share.
struct InFlightResult {
  std::vector<float> losses;  // per token, every micro-batch
  std::vector<float> grads;   // every stage's parameter gradients, accumulated
};
using InFlightActs = std::vector<std::vector<std::unique_ptr<StageActivations>>>;  // [micro-batch][stage]
inline InFlightResult run_in_flight(
    const StageConfig& c, int micro_batches, int split,
    const std::function<void(const std::vector<StageConfig>&, InFlightActs&)>& between = {}) {
  auto be = make_backend("cpu", DType::F32);
  std::vector<StageConfig> cfgs;
  if (split == 0) {
    cfgs.push_back(c);
  } else {
    StageConfig first = c, last = c;
    first.layer_last = split, first.has_head = false;
    last.layer_first = split, last.has_embedding = false;
    cfgs = {first, last};
  }
  std::vector<std::unique_ptr<GptStage>> st;
  for (StageConfig& sc : cfgs) {
    sc.finalize(8);
    st.push_back(std::make_unique<GptStage>(sc, *be));
    st.back()->init_parameters();
    st.back()->zero_grads();
  }
  const std::size_t S = st.size();
  InFlightActs acts(static_cast<std::size_t>(micro_batches));
  std::vector<double> tokens(static_cast<std::size_t>(micro_batches));
  InFlightResult out;
  for (int k = 0; k < micro_batches; ++k) {
    const HostMicroBatch mb = random_batch(cfgs[0], 11 + k);
    for (std::size_t i = 0; i < S; ++i) {
      acts[k].push_back(st[i]->make_activations());
      st[i]->load_batch(*acts[k][i], mb);
      st[i]->forward(*acts[k][i], i == 0 ? nullptr : st[i - 1]->output(*acts[k][i - 1]), true);
    }
    StageActivations& lastacts = *acts[k][S - 1];
    tokens[k] = st[S - 1]->loss_sum(lastacts).num_tokens;
    out.losses.insert(out.losses.end(), lastacts.host_losses.begin(), lastacts.host_losses.end());
  }
  if (between) between(cfgs, acts);
  for (int k = micro_batches - 1; k >= 0; --k)
    for (std::size_t i = S; i-- > 0;)
      st[i]->backward(*acts[k][i], i + 1 == S ? nullptr : st[i + 1]->input_grad(*acts[k][i + 1]),
                      float(1.0 / tokens[k]));
  for (auto& s : st) {
    const std::vector<float> g = to_host(*be, s->grads(), s->layout().total);
    out.grads.insert(out.grads.end(), g.begin(), g.end());
  }
  return out;
}

}  // namespace gptrain::test
