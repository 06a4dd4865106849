#include "core/model/param_layout.h"

#include "core/common/error.h"

#include <cmath>

namespace gptrain {

const ParamTensor* ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const ParamTensor& ParamLayout::at(const std::string& name) const {
  const ParamTensor* t = find(name);
  if (!t) fail("model has no parameter tensor '{}'", name);
  return *t;
}

namespace {

int64_t product(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Builds one tensor: global shape, blocks along `dim` (empty: replicated), init.
ParamTensor make(std::string name, std::vector<int64_t> global_shape, std::vector<ShardBlock> blocks, bool decay,
                 InitKind init, float std) {
  ParamTensor t;
  t.name = std::move(name);
  t.global_shape = global_shape;
  t.local_shape = global_shape;
  if (!blocks.empty()) {
    int64_t len = 0;
    for (const auto& b : blocks) len += b.length;
    t.local_shape[blocks[0].dim] = len;
  }
  t.blocks = std::move(blocks);
  t.numel = std::size_t(product(t.local_shape));
  t.decay = decay;
  t.init = init;
  t.init_std = std;
  return t;
}

// An MoE MLP (moe_layer.cpp): the router, the E experts' weights stacked along dim 0 (fc1 rows [gate | up]
// with swiglu, as the dense MLP), and the optional shared expert. No biases (ModelConfig::finalize_moe).
void moe_tensors(std::vector<ParamTensor>& all, const ModelConfig& c, const LocalSizes& s, const std::string& p,
                 float std, float out_std) {
  const int64_t C = c.hidden_size, E = s.E;
  std::vector<ShardBlock> experts;
  if (c.moe.ep_size > 1) experts = {{0, s.expert_first, s.E_local}};
  all.push_back(make(p + "router.weight", {E, C}, {}, true, InitKind::Normal, std));
  ParamTensor fc1 = make(p + "experts.linear_fc1.weight", {E, s.FE1, C}, experts, true, InitKind::Normal, std);
  ParamTensor fc2 = make(p + "experts.linear_fc2.weight", {E, C, s.FE}, experts, true, InitKind::Normal, out_std);
  fc1.expert = fc2.expert = true;
  all.push_back(std::move(fc1));
  all.push_back(std::move(fc2));
  if (s.FS > 0) {
    all.push_back(make(p + "shared_experts.linear_fc1.weight", {s.FS1, C}, {}, true, InitKind::Normal, std));
    all.push_back(make(p + "shared_experts.linear_fc2.weight", {C, s.FS}, {}, true, InitKind::Normal, out_std));
  }
}

}  // namespace

ParamLayout build_param_layout(const ModelConfig& c) {
  const LocalSizes s = local_sizes(c);
  const bool tp = c.tp_size > 1;
  const int64_t C = c.hidden_size, NH = c.num_attention_heads, NKV = c.num_query_groups, HS = c.kv_channels;
  const int64_t F = c.ffn_hidden_size, Vp = c.padded_vocab_size;
  const float std = c.init_method_std;
  const float out_std = std / std::sqrt(2.0f * float(c.num_layers));  // proj, fc2 (Megatron scaled init)
  auto rows = [&](int64_t off, int64_t len) { return std::vector<ShardBlock>{{0, off, len}}; };
  auto rows_if_tp = [&](int64_t off, int64_t len) { return tp ? rows(off, len) : std::vector<ShardBlock>{}; };
  auto cols_if_tp = [&](int64_t off, int64_t len) {
    return tp ? std::vector<ShardBlock>{{1, off, len}} : std::vector<ShardBlock>{};
  };

  std::vector<ParamTensor> all;
  auto norm = [&](const std::string& prefix) {
    // Megatron's zero-centred gamma stores gamma - 1: initialised to 0, the same gamma = 1 at start.
    all.push_back(make(prefix + ".weight", {C}, {}, false, c.apply_layernorm_1p ? InitKind::Zeros : InitKind::Ones, 0));
    if (c.normalization == Normalization::LayerNorm)
      all.push_back(make(prefix + ".bias", {C}, {}, false, InitKind::Zeros, 0));
  };
  const std::string wte = "embedding.word_embeddings.weight";
  if (c.has_embedding) {
    all.push_back(make(wte, {Vp, C}, rows_if_tp(s.vocab_start, s.V), true, InitKind::Normal, std));
    if (c.position_embedding == PositionEmbedding::LearnedAbsolute)
      all.push_back(make("embedding.position_embeddings.weight", {c.max_position_embeddings, C}, {}, true,
                         InitKind::Normal, std));
  }
  for (int l = c.layer_first; l < c.layer_last; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm");
    // qkv rows [Q heads | K groups | V groups]: a TP rank holds its heads of each of the three blocks.
    std::vector<ShardBlock> qkv_blocks;
    if (tp)
      qkv_blocks = {{0, s.head_start * HS, s.NH * HS},
                    {0, NH * HS + s.group_start * HS, s.NKV * HS},
                    {0, (NH + NKV) * HS + s.group_start * HS, s.NKV * HS}};
    all.push_back(make(p + "self_attention.linear_qkv.weight", {(NH + 2 * NKV) * HS, C}, qkv_blocks, true,
                       InitKind::Normal, std));
    if (c.qkv_bias())
      all.push_back(
          make(p + "self_attention.linear_qkv.bias", {(NH + 2 * NKV) * HS}, qkv_blocks, false, InitKind::Zeros, 0));
    all.push_back(make(p + "self_attention.linear_proj.weight", {C, NH * HS}, cols_if_tp(s.head_start * HS, s.NH * HS),
                       true, InitKind::Normal, out_std));
    if (c.proj_bias()) all.push_back(make(p + "self_attention.linear_proj.bias", {C}, {}, false, InitKind::Zeros, 0));
    if (c.parallel_residual != ParallelResidual::SharedNorm) norm(p + "pre_mlp_layernorm");
    if (c.moe.is_moe_layer(l)) {
      moe_tensors(all, c, s, p + "mlp.", std, out_std);
      continue;
    }
    // fc1 rows [gate | up] with swiglu: a TP rank holds its columns of each half.
    std::vector<ShardBlock> fc1_blocks;
    if (tp) {
      fc1_blocks = {{0, s.ffn_start, s.F}};
      if (c.swiglu) fc1_blocks.push_back({0, F + s.ffn_start, s.F});
    }
    const int64_t F1 = c.swiglu ? 2 * F : F;
    all.push_back(make(p + "mlp.linear_fc1.weight", {F1, C}, fc1_blocks, true, InitKind::Normal, std));
    if (c.mlp_bias()) all.push_back(make(p + "mlp.linear_fc1.bias", {F1}, fc1_blocks, false, InitKind::Zeros, 0));
    all.push_back(
        make(p + "mlp.linear_fc2.weight", {C, F}, cols_if_tp(s.ffn_start, s.F), true, InitKind::Normal, out_std));
    if (c.mlp_bias()) all.push_back(make(p + "mlp.linear_fc2.bias", {C}, {}, false, InitKind::Zeros, 0));
  }
  if (c.has_head) {
    norm("decoder.final_layernorm");
    if (c.untie_embeddings_and_output_weights) {
      all.push_back(make("output_layer.weight", {Vp, C}, rows_if_tp(s.vocab_start, s.V), true, InitKind::Normal, std));
      if (c.output_layer_bias)
        all.push_back(make("output_layer.bias", {Vp}, rows_if_tp(s.vocab_start, s.V), false, InitKind::Zeros, 0));
    } else if (!c.has_embedding) {
      ParamTensor t = make(wte, {Vp, C}, rows_if_tp(s.vocab_start, s.V), true, InitKind::Normal, std);
      t.tied_copy = true;
      all.push_back(std::move(t));
    }
  }

  ParamLayout layout;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& t : all) {
      if (t.decay != (pass == 0)) continue;
      t.offset = layout.total;
      layout.total += t.numel;
      layout.tensors.push_back(t);
    }
    if (pass == 0) layout.num_decay = layout.total;
  }
  return layout;
}

bool is_norm_weight(const std::string& name) {
  const std::string suffix = "layernorm.weight";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t local_to_global_index(const ParamTensor& t, int64_t i) {
  if (!t.sharded()) return i;
  const int dim = t.blocks[0].dim;
  // Row-major: split i into (outer, d, inner) around the sharded dim.
  int64_t inner = 1;
  for (std::size_t k = dim + 1; k < t.local_shape.size(); ++k) inner *= t.local_shape[k];
  const int64_t local_d = t.local_shape[dim];
  const int64_t outer = i / (inner * local_d);
  int64_t d = (i / inner) % local_d;
  const int64_t in = i % inner;
  int64_t gd = -1;
  for (const auto& b : t.blocks) {
    if (d < b.length) {
      gd = b.global_offset + d;
      break;
    }
    d -= b.length;
  }
  return (outer * t.global_shape[dim] + gd) * inner + in;
}

}  // namespace gptrain
