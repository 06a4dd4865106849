#include "core/model/gpt_stage.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "core/model/activation_offload.h"
#include "core/model/init_rng.h"
#include "core/model/layers.h"
#include "core/model/stage_activations.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace gptrain {

struct GptStage::Layer {
  LayerWeights w;
  LayerGrads g;
};

struct GptStage::Edge {
  EmbeddingWeights emb_w{};
  EmbeddingGrads emb_g{};
  HeadWeights head_w{};
  HeadGrads head_g{};
};

GptStage::GptStage(const ModelConfig& cfg, Backend& backend, ParallelHooks* hooks)
    : cfg_(cfg), be_(backend), hooks_(hooks ? *hooks : no_parallel_hooks()) {
  check(cfg_.padded_vocab_size > 0 && cfg_.layer_last >= 0, "GptStage: the ModelConfig was not finalized");
  sz_ = local_sizes(cfg_);
  layout_ = build_param_layout(cfg_);
  const std::size_t es = dtype_size(be_.compute_dtype());
  params_ = be_.alloc(std::max<std::size_t>(layout_.total, 1) * es);
  grads_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(layout_.total, 1) * sizeof(float)));
  be_.fill_zero(params_, layout_.total * es);
  be_.fill_zero(grads_, layout_.total * sizeof(float));

  auto p = [&](const std::string& n) -> const void* { return layout_.find(n) ? param(n) : nullptr; };
  auto g = [&](const std::string& n) -> float* { return layout_.find(n) ? grad(n) : nullptr; };
  auto norm_w = [&](const std::string& n) { return NormWeights{p(n + ".weight"), p(n + ".bias")}; };
  auto norm_g = [&](const std::string& n) { return NormGrads{g(n + ".weight"), g(n + ".bias")}; };
  for (int l = cfg_.layer_first; l < cfg_.layer_last; ++l) {
    const std::string pre = "decoder.layers." + std::to_string(l) + ".";
    const std::string ln2 =
        cfg_.parallel_residual == ParallelResidual::SharedNorm ? "input_layernorm" : "pre_mlp_layernorm";
    Layer L;
    L.w = LayerWeights{norm_w(pre + "input_layernorm"),
                       norm_w(pre + ln2),
                       p(pre + "self_attention.linear_qkv.weight"),
                       p(pre + "self_attention.linear_qkv.bias"),
                       p(pre + "self_attention.linear_proj.weight"),
                       p(pre + "self_attention.linear_proj.bias"),
                       p(pre + "mlp.linear_fc1.weight"),
                       p(pre + "mlp.linear_fc1.bias"),
                       p(pre + "mlp.linear_fc2.weight"),
                       p(pre + "mlp.linear_fc2.bias"),
                       MoeWeights{}};
    // shared_norm: the MLP reads ln1's output; its norm gradients belong to ln1 (never used as ln2).
    L.g = LayerGrads{norm_g(pre + "input_layernorm"),
                     norm_g(pre + ln2),
                     g(pre + "self_attention.linear_qkv.weight"),
                     g(pre + "self_attention.linear_qkv.bias"),
                     g(pre + "self_attention.linear_proj.weight"),
                     g(pre + "self_attention.linear_proj.bias"),
                     g(pre + "mlp.linear_fc1.weight"),
                     g(pre + "mlp.linear_fc1.bias"),
                     g(pre + "mlp.linear_fc2.weight"),
                     g(pre + "mlp.linear_fc2.bias"),
                     MoeGrads{}};
    if (cfg_.moe.is_moe_layer(l)) {
      const std::string m = pre + "mlp.";
      L.w.moe =
          MoeWeights{p(m + "router.weight"), p(m + "experts.linear_fc1.weight"), p(m + "experts.linear_fc2.weight"),
                     p(m + "shared_experts.linear_fc1.weight"), p(m + "shared_experts.linear_fc2.weight")};
      L.g.moe = MoeGrads{g(m + "router.weight"), g(m + "experts.linear_fc1.weight"), g(m + "experts.linear_fc2.weight"),
                         g(m + "shared_experts.linear_fc1.weight"), g(m + "shared_experts.linear_fc2.weight")};
    }
    layers_.push_back(L);
  }
  edge_ = std::make_unique<Edge>();
  const std::string wte = "embedding.word_embeddings.weight";
  if (cfg_.has_embedding) {
    edge_->emb_w = {p(wte), p("embedding.position_embeddings.weight")};
    edge_->emb_g = {g(wte), g("embedding.position_embeddings.weight")};
  }
  if (cfg_.has_head) {
    const std::string out = cfg_.untie_embeddings_and_output_weights ? "output_layer.weight" : wte;
    edge_->head_w = {norm_w("decoder.final_layernorm"), p(out), p("output_layer.bias")};
    edge_->head_g = {norm_g("decoder.final_layernorm"), g(out), g("output_layer.bias")};
  }
  build_grad_groups();
  recompute_group_first_ = recompute_group_first(cfg_.recompute, cfg_.num_local_layers());
  if (const std::size_t ws = StageActivations::replay_workspace_bytes_for(be_.compute_dtype(), cfg_, sz_)) {
    replay_workspace_ = be_.alloc(ws);
    be_.fill_zero(replay_workspace_, ws);
  }
  if (offload_slots(cfg_) > 0)
    offload_ = std::make_unique<ActivationOffload>(
        be_, cfg_, StageActivations::offload_unit_bytes_for(be_.compute_dtype(), cfg_, sz_));
}

void GptStage::build_grad_groups() {
  // The gradient pointers each backward part writes, in backward order; a tensor belongs to the last
  // part that writes it.
  std::vector<std::vector<const float*>> parts;
  if (cfg_.has_head) {
    const HeadGrads& h = edge_->head_g;
    parts.push_back({h.lnf.w, h.lnf.b, h.out_w, h.out_b});
  }
  for (int li = cfg_.num_local_layers() - 1; li >= 0; --li) {
    const LayerGrads& l = layers_[li].g;
    parts.push_back({l.ln1.w, l.ln1.b, l.ln2.w, l.ln2.b, l.qkv_w, l.qkv_b, l.proj_w, l.proj_b, l.fc1_w, l.fc1_b,
                     l.fc2_w, l.fc2_b, l.moe.router_w, l.moe.fc1_w, l.moe.fc2_w, l.moe.shared_fc1_w,
                     l.moe.shared_fc2_w});
  }
  if (cfg_.has_embedding) parts.push_back({edge_->emb_g.wte, edge_->emb_g.wpe});
  std::map<std::size_t, int> by_offset;  // tensor offset -> index
  for (std::size_t i = 0; i < layout_.tensors.size(); ++i) by_offset[layout_.tensors[i].offset] = int(i);
  std::vector<int> last(layout_.tensors.size(), -1);
  for (std::size_t k = 0; k < parts.size(); ++k)
    for (const float* p : parts[k]) {
      if (p == nullptr) continue;
      auto it = by_offset.find(std::size_t(p - grads_));
      check(it != by_offset.end(), "GptStage: a gradient pointer of backward part {} starts no tensor", k);
      last[it->second] = int(k);
    }
  grad_groups_.assign(parts.size(), {});
  for (std::size_t i = 0; i < last.size(); ++i) {
    check(last[i] >= 0 || layout_.tensors[i].numel == 0, "GptStage: no backward part writes the gradient of {}",
          layout_.tensors[i].name);
    if (last[i] >= 0) grad_groups_[last[i]].push_back(int(i));
  }

  // The weights each forward part reads, in the same part numbering.
  std::vector<std::vector<const void*>> reads;
  if (cfg_.has_head) {
    const HeadWeights& h = edge_->head_w;
    reads.push_back({h.lnf.w, h.lnf.b, h.out_w, h.out_b});
  }
  for (int li = cfg_.num_local_layers() - 1; li >= 0; --li) {
    const LayerWeights& l = layers_[li].w;
    reads.push_back({l.ln1.w, l.ln1.b, l.ln2.w, l.ln2.b, l.qkv_w, l.qkv_b, l.proj_w, l.proj_b, l.fc1_w, l.fc1_b,
                     l.fc2_w, l.fc2_b, l.moe.router_w, l.moe.fc1_w, l.moe.fc2_w, l.moe.shared_fc1_w,
                     l.moe.shared_fc2_w});
    if (const NormWeights* n = next_norm(li)) reads.back().insert(reads.back().end(), {n->w, n->b});
  }
  if (cfg_.has_embedding) reads.push_back({edge_->emb_w.wte, edge_->emb_w.wpe});
  const std::size_t es = dtype_size(be_.compute_dtype());
  param_reads_.assign(reads.size(), {});
  for (std::size_t k = 0; k < reads.size(); ++k)
    for (const void* p : reads[k]) {
      if (p == nullptr) continue;
      auto it = by_offset.find(std::size_t(static_cast<const char*>(p) - static_cast<const char*>(params_)) / es);
      check(it != by_offset.end(), "GptStage: a weight pointer of forward part {} starts no tensor", k);
      param_reads_[k].push_back(it->second);
    }
}

const NormWeights* GptStage::next_norm(int li) const {
  if (!cfg_.fused_ops) return nullptr;
  if (li + 1 < cfg_.num_local_layers()) return &layers_[li + 1].w.ln1;
  return cfg_.has_head ? &edge_->head_w.lnf : nullptr;
}

GptStage::~GptStage() {
  offload_.reset();
  if (replay_workspace_) be_.release(replay_workspace_);
  be_.release(params_);
  be_.release(grads_);
}

void* GptStage::param(const std::string& name) {
  return static_cast<char*>(params_) + layout_.at(name).offset * dtype_size(be_.compute_dtype());
}

float* GptStage::grad(const std::string& name) { return grads_ + layout_.at(name).offset; }

void GptStage::init_values(const ParamTensor& t, float* out) const { init_param_values(t, cfg_.seed, out); }

void GptStage::init_parameters() {
  set_parameters([this](const ParamTensor& t, float* out) { init_values(t, out); });
}

void GptStage::set_parameters(const std::function<void(const ParamTensor&, float*)>& fill) {
  const DType dt = be_.compute_dtype();
  const std::size_t es = dtype_size(dt);
  std::vector<float> host;
  float* staging =
      dt == DType::F32 ? nullptr : static_cast<float*>(be_.alloc(std::max<std::size_t>(layout_.total, 1) * 4));
  for (const auto& t : layout_.tensors) {
    host.resize(t.numel);
    fill(t, host.data());
    void* dst = static_cast<char*>(params_) + t.offset * es;
    if (dt == DType::F32) {
      be_.copy_to_device(dst, host.data(), t.numel * 4);
    } else {
      be_.copy_to_device(staging + t.offset, host.data(), t.numel * 4);
      be_.convert(dst, dt, staging + t.offset, DType::F32, t.numel);
    }
  }
  if (staging) be_.release(staging);
  be_.synchronize();
}

void GptStage::zero_grads() { be_.fill_zero(grads_, layout_.total * sizeof(float)); }

std::unique_ptr<StageActivations> GptStage::make_activations() {
  auto a =
      std::make_unique<StageActivations>(be_, cfg_, sz_, replay_workspace_, offload_ ? offload_->staging() : nullptr);
  if (offload_) offload_->attach(*a);
  return a;
}

void GptStage::load_batch(StageActivations& a, const HostMicroBatch& mb) {
  const std::size_t N = std::size_t(sz_.N);
  check(mb.tokens.size() == N && mb.labels.size() == N && mb.loss_mask.size() == N && mb.position_ids.size() == N,
        "micro-batch holds {} tokens, {} labels, {} mask values, {} positions; the model expects B*T = {} each",
        mb.tokens.size(), mb.labels.size(), mb.loss_mask.size(), mb.position_ids.size(), N);
  for (std::size_t i = 0; i < N; ++i) {
    check(mb.tokens[i] >= 0 && mb.tokens[i] < cfg_.vocab_size && mb.labels[i] >= 0 && mb.labels[i] < cfg_.vocab_size,
          "micro-batch row {}: token {} / label {} outside the vocabulary [0, {})", i, mb.tokens[i], mb.labels[i],
          cfg_.vocab_size);
    check(mb.position_ids[i] >= 0 && mb.position_ids[i] < cfg_.max_position_embeddings,
          "micro-batch row {}: position {} outside [0, --max-position-embeddings {})", i, mb.position_ids[i],
          cfg_.max_position_embeddings);
  }
  be_.copy_to_device(a.tokens, mb.tokens.data(), N * 4);
  be_.copy_to_device(a.targets, mb.labels.data(), N * 4);
  be_.copy_to_device(a.positions, mb.position_ids.data(), N * 4);
  a.has_segments = !mb.segment_ids.empty();
  if (a.has_segments) {
    check(mb.segment_ids.size() == N, "micro-batch holds {} segment ids; expected {}", mb.segment_ids.size(), N);
    be_.copy_to_device(a.segment_ids, mb.segment_ids.data(), N * 4);
  }
  a.host_mask = mb.loss_mask;
  a.dropout_seed = mb.dropout_seed;
}

void GptStage::forward(StageActivations& a, const void* input, bool train) {
  ProfileRange range("forward");
  const LayerContext ctx{be_, hooks_, cfg_, sz_};
  a.train = train;
  if (offload_) offload_->before_forward(a);
  const int parts = static_cast<int>(param_reads_.size());
  if (cfg_.has_embedding) {
    params_needed(parts - 1);
    ProfileRange emb_range("embedding");
    embedding_forward(ctx, edge_->emb_w, a, train);
  } else {
    check(input != nullptr, "GptStage::forward: a stage without the embedding needs an input activation");
    be_.copy(a.res[0], input, std::size_t(sz_.N_seq) * sz_.C * dtype_size(be_.compute_dtype()));
  }
  // With fused ops each layer's last residual add also computes the next norm of this stage (the next
  // layer's input norm, or the final norm); the first layer's input comes from outside and is normed plainly.
  const int L = cfg_.num_local_layers();
  for (int li = 0; li < L; ++li) {
    params_needed((cfg_.has_head ? 1 : 0) + (L - 1 - li));
    ProfileRange layer_range("layer", cfg_.layer_first + li);
    if (void* part = a.saved_input_part[li]) {  // keep this TP rank's share of the group input
      const std::size_t es = dtype_size(be_.compute_dtype());
      be_.copy(part, static_cast<const char*>(a.res[li]) + std::size_t(cfg_.tp_rank) * a.saved_part_elems * es,
               a.saved_part_elems * es);
    }
    if (offload_) offload_->before_layer_forward(a, li);
    run_layer_forward(a, li, train);
    if (offload_) offload_->after_layer_forward(a, li);
  }
  if (cfg_.has_head) {
    params_needed(0);
    ProfileRange head_range("output-layer");
    head_forward(ctx, edge_->head_w, a, cfg_.fused_ops && L > 0);
  }
}

void GptStage::run_layer_forward(StageActivations& a, int li, bool train, bool replay_first, bool replay_last) {
  const LayerContext ctx{be_, hooks_, cfg_, sz_};
  NormFusion f;
  f.input_normed = cfg_.fused_ops && li > 0 && !replay_first;
  f.next_norm = replay_last ? nullptr : next_norm(li);
  layer_forward(ctx, layers_[li].w, a, li, train, f);
}

const void* GptStage::output(StageActivations& a) { return a.res[cfg_.num_local_layers()]; }

GptStage::LossSum GptStage::loss_sum(StageActivations& a) {
  check(cfg_.has_head, "GptStage::loss_sum: only the last stage computes the loss");
  LossSum s;
  for (std::size_t i = 0; i < a.host_losses.size(); ++i) {
    s.loss_sum += double(a.host_losses[i]) * double(a.host_mask[i]);
    s.num_tokens += double(a.host_mask[i]);
  }
  return s;
}

void GptStage::backward(StageActivations& a, const void* dout, float loss_weight) {
  ProfileRange range("backward");
  const LayerContext ctx{be_, hooks_, cfg_, sz_};
  if (cfg_.has_head) {
    std::vector<float> dloss(a.host_mask.size());
    for (std::size_t i = 0; i < dloss.size(); ++i) dloss[i] = a.host_mask[i] * loss_weight;
    be_.copy_to_device(a.dloss, dloss.data(), dloss.size() * sizeof(float));
    ProfileRange head_range("output-layer");
    head_backward(ctx, edge_->head_w, edge_->head_g, a);
    head_range.end();
    grads_done(0);
  } else {
    check(dout != nullptr, "GptStage::backward: a stage without the head needs the output gradient");
    be_.copy(a.dres, dout, std::size_t(sz_.N_seq) * sz_.C * dtype_size(be_.compute_dtype()));
  }
  int part = cfg_.has_head ? 1 : 0;
  for (int li = cfg_.num_local_layers() - 1; li >= 0; --li) {
    ProfileRange layer_range("layer", cfg_.layer_first + li);
    if (offload_) offload_->before_layer_backward(a, li);
    recompute_for_backward(a, li);
    layer_backward(ctx, layers_[li].w, layers_[li].g, a, li);
    layer_range.end();
    grads_done(part++);
  }
  if (cfg_.has_embedding) {
    ProfileRange emb_range("embedding");
    embedding_backward(ctx, edge_->emb_g, a);
    emb_range.end();
    grads_done(part);
  }
}

const void* GptStage::input_grad(StageActivations& a) { return a.dres; }

// Activation recomputation (recompute.h): before layer li's backward, recompute what the arena did not
// keep with the functions forward used, so backward reads forward's values bit for bit.
void GptStage::recompute_for_backward(StageActivations& a, int li) {
  const RecomputeConfig& r = cfg_.recompute;
  if (r.full()) {
    const int first = recompute_group_first_[li];
    const bool group_last = li + 1 == cfg_.num_local_layers() || recompute_group_first_[li + 1] != first;
    if (first < 0 || !group_last) return;  // kept, or replayed with its group's last layer
    // Replay the group from its kept input, normed here (the fused residual add of the layer before
    // gives the same values). Its last layer rewrites the next layer's kept input with the values it
    // holds, but not the next norm: that buffer may be this group's first slot.
    ProfileRange range("recompute");
    if (const void* part = a.saved_input_part[first])
      hooks_.gather_saved_activation(a.res[first], part, a.saved_part_elems);
    for (int l = first; l <= li; ++l) run_layer_forward(a, l, a.train, l == first, l == li);
  } else if (r.selective()) {
    ProfileRange range("recompute");
    const LayerContext ctx{be_, hooks_, cfg_, sz_};
    const LayerWeights& w = layers_[li].w;
    if (r.layernorm) layer_norms_forward(ctx, w, a, li);
    if (cfg_.sequence_parallel) layer_norm_gathers_forward(ctx, a, li);
    if (r.core_attn) attention_core_forward(ctx, a, li, a.train);
    const bool moe = cfg_.moe.is_moe_layer(cfg_.layer_first + li);
    if (r.mlp && !moe) mlp_activation_forward(ctx, w, a, li);  // Megatron's mlp: dense MLPs only
    if (r.moe && moe)
      moe_mlp_forward(ctx, w.moe, a, li, a.tmp_full);  // (N, C); the output itself is not needed again
    else if (r.moe_act && moe)
      moe_activation_forward(ctx, a, li);
  }
}

}  // namespace gptrain
