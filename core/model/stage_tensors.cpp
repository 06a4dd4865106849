#include "core/model/stage_tensors.h"

#include <cmath>

namespace gptrain {

namespace {

// One tensor: global shape, this rank's blocks along one dim (empty: the whole tensor), init.
ParamTensor make(std::string name, std::vector<int64_t> global_shape, std::vector<ShardBlock> blocks, bool decay,
                 InitKind init, float std) {
  ParamTensor t;
  t.name = std::move(name);
  t.global_shape = global_shape;
  t.local_shape = std::move(global_shape);
  // Each sharded dim holds the sum of its blocks (expert tensors may be split along two dims).
  for (const auto& b : blocks) t.local_shape[b.dim] = 0;
  for (const auto& b : blocks) t.local_shape[b.dim] += b.length;
  t.blocks = std::move(blocks);
  t.numel = 1;
  for (int64_t d : t.local_shape) t.numel *= std::size_t(d);
  t.decay = decay;
  t.init = init;
  t.init_std = std;
  return t;
}

}  // namespace

TensorSpecs::TensorSpecs(const StageConfig& c) : c_(c), s_(local_sizes(c)) {}

ParamTensor TensorSpecs::weight(std::string name, std::vector<int64_t> shape, std::vector<ShardBlock> shard,
                                Init init) const {
  float std = c_.init_method_std;
  // Megatron: a separate embedding std draws N(0, std); without one (or with the same value) the embeddings
  // take init_method, which --init-method-xavier-uniform makes Xavier-uniform.
  const bool own_embedding_std =
      init == Init::Embedding && c_.embedding_init_method_std && *c_.embedding_init_method_std != c_.init_method_std;
  if (own_embedding_std) std = *c_.embedding_init_method_std;
  if (c_.init_method_xavier_uniform && !own_embedding_std) {
    // The fans of one (out, in) matrix: the global shape (so every TP/EP layout draws the same tensor), per
    // expert for the stacked (E, out, in) experts.
    const double fan_out = double(shape[shape.size() - 2]), fan_in = double(shape.back());
    ParamTensor t = make(std::move(name), std::move(shape), std::move(shard), true, InitKind::Uniform, 0.0f);
    t.init_bound = float(std::sqrt(6.0 / (fan_in + fan_out)));
    return t;
  }
  // Megatron's scaled init of the layers' output projections (proj, fc2): std / sqrt(2 L).
  if (init == Init::ScaledNormal) std = std / std::sqrt(2.0f * float(c_.num_layers));
  return make(std::move(name), std::move(shape), std::move(shard), true, InitKind::Normal, std);
}

ParamTensor TensorSpecs::bias(std::string name, int64_t n, std::vector<ShardBlock> shard) const {
  return make(std::move(name), {n}, std::move(shard), false, InitKind::Zeros, 0.0f);
}

ParamTensor TensorSpecs::norm_weight(std::string name) const {
  // Megatron's zero-centred gamma stores gamma - 1: initialised to 0, the same gamma = 1 at start.
  return make(std::move(name), {c_.hidden_size}, {}, false, c_.apply_layernorm_1p ? InitKind::Zeros : InitKind::Ones,
              0.0f);
}

ParamTensor TensorSpecs::head_norm_weight(std::string name) const {
  return make(std::move(name), {c_.kv_channels}, {}, false, c_.apply_layernorm_1p ? InitKind::Zeros : InitKind::Ones,
              0.0f);
}

std::vector<ShardBlock> TensorSpecs::qkv_rows() const {
  if (c_.tp_size == 1) return {};
  const int64_t NH = c_.num_attention_heads, NKV = c_.num_query_groups, HS = c_.kv_channels;
  return {{0, s_.head_start * HS, s_.NH * HS},
          {0, NH * HS + s_.group_start * HS, s_.NKV * HS},
          {0, (NH + NKV) * HS + s_.group_start * HS, s_.NKV * HS}};
}

std::vector<ShardBlock> TensorSpecs::attention_cols() const {
  if (c_.tp_size == 1) return {};
  return {{1, int64_t(s_.head_start) * c_.kv_channels, int64_t(s_.NH) * c_.kv_channels}};
}

std::vector<ShardBlock> TensorSpecs::ffn_rows() const {
  if (c_.tp_size == 1) return {};
  std::vector<ShardBlock> rows{{0, s_.ffn_start, s_.F}};
  if (c_.gated_mlp()) rows.push_back({0, int64_t(c_.ffn_hidden_size) + s_.ffn_start, s_.F});
  return rows;
}

std::vector<ShardBlock> TensorSpecs::ffn_cols() const {
  if (c_.tp_size == 1) return {};
  return {{1, s_.ffn_start, s_.F}};
}

std::vector<ShardBlock> TensorSpecs::vocab_rows() const {
  if (c_.tp_size == 1) return {};
  return {{0, s_.vocab_start, s_.V}};
}

TensorSpecs::ExpertFfnSplit TensorSpecs::expert_fc1_rows() const {
  if (c_.etp_size == 1) return {1, {}};
  const int64_t FE = c_.moe.ffn_hidden_size;
  std::vector<ShardBlock> rows{{1, s_.expert_ffn_start, s_.FE}};
  if (c_.gated_mlp()) rows.push_back({1, FE + s_.expert_ffn_start, s_.FE});
  return {1, rows};
}

TensorSpecs::ExpertFfnSplit TensorSpecs::expert_fc2_cols() const {
  if (c_.etp_size == 1) return {2, {}};
  return {2, {{2, s_.expert_ffn_start, s_.FE}}};
}

ParamTensor TensorSpecs::expert_weight(std::string name, const ExpertFfnSplit& ffn, Init init) const {
  // Global shapes: the whole ffn width of every expert (the local one is FE of LocalSizes).
  const int64_t FE = c_.moe.ffn_hidden_size, FE1 = c_.gated_mlp() ? 2 * FE : FE, C = c_.hidden_size;
  std::vector<int64_t> shape = ffn.dim == 1 ? std::vector<int64_t>{s_.E, FE1, C} : std::vector<int64_t>{s_.E, C, FE};
  std::vector<ShardBlock> blocks;  // the experts' dim first, then the ffn dim (a slice's dims in order)
  if (c_.ep_size > 1) blocks = {{0, s_.expert_first, s_.E_local}};
  blocks.insert(blocks.end(), ffn.blocks.begin(), ffn.blocks.end());
  ParamTensor t = weight(std::move(name), std::move(shape), std::move(blocks), init);
  t.expert = true;
  return t;
}

}  // namespace gptrain
