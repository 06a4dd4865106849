#include "core/model/gpt_stage.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "core/model/activation_offload.h"
#include "core/model/fp8_scaling.h"
#include "core/model/init_rng.h"
#include "core/model/layers.h"
#include "core/model/stage_activations.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace gptrain {

GptStage::GptStage(const StageConfig& cfg, Backend& backend, ParallelHooks* hooks)
    : cfg_(cfg), be_(backend), hooks_(hooks ? *hooks : no_parallel_hooks()) {
  check(cfg_.padded_vocab_size > 0 && cfg_.layer_last >= 0, "GptStage: the StageConfig was not finalized");
  sz_ = local_sizes(cfg_);
  layout_ = build_param_layout(cfg_);
  const std::size_t es = dtype_size(be_.compute_dtype());
  params_ = be_.alloc(std::max<std::size_t>(layout_.total, 1) * es);
  grads_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(layout_.total, 1) * sizeof(float)));
  be_.fill_zero(params_, layout_.total * es);
  be_.fill_zero(grads_, layout_.total * sizeof(float));

  // Every member of the stage's tensor structs points at its tensor (stage_tensors.h).
  const TensorSpecs specs(cfg_);
  for_each_stage_tensor(specs, w_, [&](const ParamTensor& t, const void*& m) { m = param(t.name); });
  for_each_stage_tensor(specs, g_, [&](const ParamTensor& t, float*& m) { m = grad(t.name); });
  build_grad_groups(specs);
  recompute_group_first_ = recompute_group_first(cfg_.recompute, cfg_.num_local_layers());
  if (const std::size_t ws = StageActivations::replay_workspace_bytes_for(be_.compute_dtype(), cfg_, sz_)) {
    replay_workspace_ = be_.alloc(ws);
    be_.fill_zero(replay_workspace_, ws);
  }
  if (cfg_.moe.expert_bias) {
    const std::size_t n = std::max<std::size_t>(std::size_t(cfg_.num_local_layers()) * cfg_.moe.num_experts, 1);
    expert_bias_ = static_cast<float*>(be_.alloc(n * sizeof(float)));
    be_.fill_zero(expert_bias_, n * sizeof(float));
  }
  if (cfg_.fp8.enabled) {
    const Fp8StageState::Sizes z = Fp8StageState::sizes_for(be_.compute_dtype(), cfg_, sz_, be_.fp8_gemm_limited());
    auto bytes = [&](std::size_t n) { return n ? be_.alloc(n) : nullptr; };
    fp8_.config = &cfg_.fp8;
    fp8_.state = static_cast<float*>(be_.alloc(z.state));
    fp8_.amax_scratch = fp8_.state + (z.state / sizeof(float) - 1);
    fp8_.input_codes = static_cast<uint8_t*>(bytes(z.input_codes));
    fp8_.weight_codes = static_cast<uint8_t*>(bytes(z.weight_codes));
    fp8_.grad_codes = static_cast<uint8_t*>(bytes(z.grad_codes));
    fp8_.grad_codes_t = static_cast<uint8_t*>(bytes(z.grad_codes_t));
    fp8_.input_q = bytes(z.input_q);
    fp8_.weight_q = bytes(z.weight_q);
    fp8_.grad_q = bytes(z.grad_q);
    set_fp8_state(fp8_initial_state(cfg_.num_layers, cfg_.fp8));
  }
  if (offload_slots(cfg_) > 0)
    offload_ = std::make_unique<ActivationOffload>(
        be_, cfg_, StageActivations::offload_unit_bytes_for(be_.compute_dtype(), cfg_, sz_));
}

void GptStage::build_grad_groups(const TensorSpecs& specs) {
  std::unordered_map<std::string, int> index;  // tensor name -> index in layout_.tensors
  for (std::size_t i = 0; i < layout_.tensors.size(); ++i) index[layout_.tensors[i].name] = int(i);
  // The tensors each part binds, in backward order (the head, the layers last to first, the embedding):
  // backward writes their gradients, forward reads their weights.
  std::vector<std::vector<int>> parts;
  auto add_part = [&](auto visit) {
    parts.emplace_back();
    visit([&](const ParamTensor& t, const void*&) { parts.back().push_back(index.at(t.name)); });
  };
  if (cfg_.has_head) add_part([&](auto bind) { for_each_head_tensor(specs, w_.head, bind); });
  for (int li = cfg_.num_local_layers() - 1; li >= 0; --li)
    add_part([&](auto bind) { for_each_layer_tensor(specs, cfg_.layer_first + li, w_.layers[li], bind); });
  if (cfg_.has_embedding) add_part([&](auto bind) { for_each_embedding_tensor(specs, w_.embedding, bind); });

  // A tensor's gradient belongs to the last part that writes it (tied embeddings on one stage: the embedding's).
  std::vector<int> last(layout_.tensors.size(), -1);
  for (std::size_t k = 0; k < parts.size(); ++k)
    for (int i : parts[k]) last[i] = int(k);
  grad_groups_.assign(parts.size(), {});
  for (std::size_t i = 0; i < last.size(); ++i)
    if (last[i] >= 0) grad_groups_[last[i]].push_back(int(i));

  // With fused ops a layer also reads the next norm of the stage (the next layer's ln1, or the final norm).
  param_reads_ = parts;
  const std::size_t es = dtype_size(be_.compute_dtype());
  auto index_of_weight = [&](const void* w) {
    const std::size_t offset = std::size_t(static_cast<const char*>(w) - static_cast<const char*>(params_)) / es;
    for (std::size_t i = 0; i < layout_.tensors.size(); ++i)
      if (layout_.tensors[i].offset == offset) return int(i);
    fail("GptStage: a norm weight starts no tensor");
  };
  const int first_layer_part = cfg_.has_head ? 1 : 0, L = cfg_.num_local_layers();
  for (int li = 0; li < L; ++li)
    if (const NormWeights* n = next_norm(li)) {
      std::vector<int>& reads = param_reads_[first_layer_part + (L - 1 - li)];
      reads.push_back(index_of_weight(n->w));
      if (n->b) reads.push_back(index_of_weight(n->b));
    }
}

const NormWeights* GptStage::next_norm(int li) const {
  if (!cfg_.fused_ops) return nullptr;
  if (li + 1 < cfg_.num_local_layers()) return &w_.layers[li + 1].ln1;
  return cfg_.has_head ? &w_.head.lnf : nullptr;
}

GptStage::~GptStage() {
  offload_.reset();
  if (replay_workspace_) be_.release(replay_workspace_);
  if (expert_bias_) be_.release(expert_bias_);
  for (void* p : {static_cast<void*>(fp8_.state), static_cast<void*>(fp8_.input_codes),
                  static_cast<void*>(fp8_.weight_codes), static_cast<void*>(fp8_.grad_codes),
                  static_cast<void*>(fp8_.grad_codes_t), fp8_.input_q, fp8_.weight_q, fp8_.grad_q})
    if (p) be_.release(p);
  be_.release(params_);
  be_.release(grads_);
}

void* GptStage::param(const std::string& name) {
  return static_cast<char*>(params_) + layout_.at(name).offset * dtype_size(be_.compute_dtype());
}

float* GptStage::grad(const std::string& name) { return grads_ + layout_.at(name).offset; }

void GptStage::set_expert_bias(const std::vector<float>& all_layers) {
  if (!expert_bias_) return;
  const std::size_t E = std::size_t(cfg_.moe.num_experts);
  check(all_layers.size() == std::size_t(cfg_.num_layers) * E, "GptStage: {} expert-bias values for {} layers of {}",
        all_layers.size(), cfg_.num_layers, E);
  be_.copy_to_device(expert_bias_, all_layers.data() + std::size_t(cfg_.layer_first) * E,
                     std::size_t(cfg_.num_local_layers()) * E * sizeof(float));
}

void GptStage::set_fp8_state(const std::vector<float>& all_layers) {
  if (!fp8_.state) return;
  const std::size_t per_layer = std::size_t(kFp8TensorsPerLayer) * fp8_state_stride(cfg_.fp8);
  check(all_layers.size() == std::size_t(cfg_.num_layers) * per_layer, "GptStage: {} FP8 state values for {} layers",
        all_layers.size(), cfg_.num_layers);
  be_.copy_to_device(fp8_.state, all_layers.data() + std::size_t(cfg_.layer_first) * per_layer,
                     std::size_t(cfg_.num_local_layers()) * per_layer * sizeof(float));
}

void GptStage::get_fp8_state(std::vector<float>& all_layers) {
  if (!fp8_.state) return;
  const std::size_t per_layer = std::size_t(kFp8TensorsPerLayer) * fp8_state_stride(cfg_.fp8);
  check(all_layers.size() == std::size_t(cfg_.num_layers) * per_layer, "GptStage: {} FP8 state values for {} layers",
        all_layers.size(), cfg_.num_layers);
  be_.copy_to_host(all_layers.data() + std::size_t(cfg_.layer_first) * per_layer, fp8_.state,
                   std::size_t(cfg_.num_local_layers()) * per_layer * sizeof(float));
}

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
  const LayerContext ctx{be_, hooks_, cfg_, sz_, expert_bias_, fp8_ptr()};
  a.train = train;
  if (offload_) offload_->before_forward(a);
  const int parts = static_cast<int>(param_reads_.size());
  if (cfg_.has_embedding) {
    params_needed(parts - 1);
    ProfileRange emb_range("embedding");
    embedding_forward(ctx, w_.embedding, a, train);
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
    head_forward(ctx, w_.head, a, cfg_.fused_ops && L > 0);
  }
}

void GptStage::run_layer_forward(StageActivations& a, int li, bool train, bool replay_first, bool replay_last) {
  const LayerContext ctx{be_, hooks_, cfg_, sz_, expert_bias_, fp8_ptr()};
  NormFusion f;
  f.input_normed = cfg_.fused_ops && li > 0 && !replay_first;
  f.next_norm = replay_last ? nullptr : next_norm(li);
  layer_forward(ctx, w_.layers[li], a, li, train, f);
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
  const LayerContext ctx{be_, hooks_, cfg_, sz_, expert_bias_, fp8_ptr()};
  if (cfg_.has_head) {
    std::vector<float> dloss(a.host_mask.size());
    for (std::size_t i = 0; i < dloss.size(); ++i) dloss[i] = a.host_mask[i] * loss_weight;
    be_.copy_to_device(a.dloss, dloss.data(), dloss.size() * sizeof(float));
    ProfileRange head_range("output-layer");
    head_backward(ctx, w_.head, g_.head, a);
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
    layer_backward(ctx, w_.layers[li], g_.layers[li], a, li);
    layer_range.end();
    grads_done(part++);
  }
  if (cfg_.has_embedding) {
    ProfileRange emb_range("embedding");
    embedding_backward(ctx, g_.embedding, a);
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
    const LayerContext ctx{be_, hooks_, cfg_, sz_, expert_bias_, fp8_ptr()};
    const LayerWeights& w = w_.layers[li];
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
