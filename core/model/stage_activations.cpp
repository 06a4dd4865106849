#include "core/model/stage_activations.h"

#include "core/common/checked_size.h"
#include "core/common/error.h"
#include "core/model/activation_offload.h"

#include <algorithm>
#include <cstddef>

namespace gptrain {

namespace {

// Carves aligned buffers out of one allocation: a first pass with base == null only measures. seek()
// lets buffers of different layers share addresses (the replay workspace); used() is the high mark.
class Carver {
 public:
  explicit Carver(char* base) : base_(base) {}
  void* take(std::size_t bytes) {
    const std::size_t at = at_;
    at_ = checked_add(at_, checked_add(bytes, 255, kWhat) / 256 * 256, kWhat);
    used_ = std::max(used_, at_);
    return base_ ? base_ + at : nullptr;
  }
  // `count` elements of `elem` bytes.
  void* take(std::size_t count, std::size_t elem) { return take(checked_mul(count, elem, kWhat)); }
  void seek(std::size_t at) { at_ = at; }
  std::size_t used() const { return used_; }
  static constexpr const char* kWhat = "the activation arena of a micro-batch";

 private:
  char* base_;
  std::size_t at_ = 0, used_ = 0;
};

// Buffers taken from one Carver: of the compute dtype (es bytes an element), fp32 or int32.
struct TypedTake {
  Carver& cv;
  std::size_t es;
  void* act(std::size_t n) const { return cv.take(n, es); }
  float* f32(std::size_t n) const { return static_cast<float*>(cv.take(n, sizeof(float))); }
  int32_t* i32(std::size_t n) const { return static_cast<int32_t*>(cv.take(n, sizeof(int32_t))); }
};

// The pieces of a layer's saved activations, as recomputation keeps or replays them.
enum class Part { Norm1, Norm1Full, Qkv, Core, ResMid, Norm2, Norm2Full, Mlp, Moe, MoeAct };

template <class Pick>
void carve_layer(LayerActivations& la, Pick&& where, const StageConfig& c, const LocalSizes& s, std::size_t es,
                 bool moe) {
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  const bool sp = c.sequence_parallel;
  const bool ln = c.normalization == Normalization::LayerNorm;
  auto act = [&](Part p, std::size_t n) { return where(p).take(n, es); };
  auto f32 = [&](Part p, std::size_t n) { return static_cast<float*>(where(p).take(n, sizeof(float))); };
  // A norm's output (this rank's rows), statistics and, with sequence parallelism, gathered output.
  auto norm = [&](Part p, Part full, auto& y, float*& mean, float*& rstd, auto& y_full) {
    y = act(p, Ns * C);
    mean = ln ? f32(p, Ns) : nullptr;
    rstd = f32(p, Ns);
    y_full = sp ? act(full, N * C) : y;
  };
  norm(Part::Norm1, Part::Norm1Full, la.ln1, la.ln1_mean, la.ln1_rstd, la.ln1_full);
  la.qkv = act(Part::Qkv, N * s.QKV);
  const std::size_t qk_heads = N * std::size_t(s.NH + s.NKV);
  const bool qk_norm = c.qk_layernorm || c.qk_l2_norm;
  la.qk_in = qk_norm ? act(Part::Qkv, qk_heads * s.HS) : nullptr;
  la.qk_rstd = qk_norm ? f32(Part::Qkv, qk_heads) : nullptr;
  la.atty = act(Part::Core, N * s.ATT);
  la.lse = f32(Part::Core, std::size_t(s.B) * s.NH * s.T);
  la.res_mid = c.parallel_residual == ParallelResidual::None ? act(Part::ResMid, Ns * C) : nullptr;
  if (c.parallel_residual == ParallelResidual::SharedNorm) {
    la.ln2 = la.ln1, la.ln2_mean = la.ln1_mean, la.ln2_rstd = la.ln1_rstd, la.ln2_full = la.ln1_full;
  } else {
    norm(Part::Norm2, Part::Norm2Full, la.ln2, la.ln2_mean, la.ln2_rstd, la.ln2_full);
  }
  if (!moe) {
    la.fc1 = act(Part::Mlp, N * s.F1);
    la.act = act(Part::Mlp, N * s.F);
    return;
  }
  la.fc1 = la.act = nullptr;
  const std::size_t E = s.E, K = s.K, R = s.moe_rows, RX = s.moe_expert_rows;
  auto i32 = [&](std::size_t n) { return static_cast<int32_t*>(where(Part::Moe).take(n, sizeof(int32_t))); };
  la.router_in = c.moe.input_jitter_eps > 0.0f ? act(Part::Moe, N * C) : nullptr;
  la.router_logits = f32(Part::Moe, N * E);
  la.router_probs = f32(Part::Moe, N * K);
  la.router_experts = i32(N * K);
  la.router_loss_experts = c.moe.modified_choice() && c.moe.balance_loss_on() ? i32(N * K) : la.router_experts;
  la.router_scores = f32(Part::Moe, N * E);
  la.dest_row = i32(N * K);
  la.segment_rows = i32(E);
  la.moe_losses = f32(Part::Moe, 2);
  // One process: the experts compute on the permuted buffer itself (ParallelHooks::moe_to_experts).
  const bool local = c.ep_size == 1;
  // Expert side (RX rows: what the local experts may receive) and token side (R rows: this rank's buffer).
  la.moe_in = act(Part::Moe, RX * C);
  la.moe_perm = local ? la.moe_in : act(Part::Moe, R * C);
  la.moe_fc1 = act(Part::Moe, RX * s.FE1);
  la.moe_act = act(Part::MoeAct, RX * s.FE);
  la.moe_out = act(Part::Moe, RX * C);
  la.moe_out_perm = local ? la.moe_out : act(Part::Moe, R * C);
  la.shared_fc1 = s.FS > 0 ? act(Part::Moe, N * s.FS1) : nullptr;
  la.shared_act = s.FS > 0 ? act(Part::MoeAct, N * s.FS) : nullptr;
}

// Whether selective recomputation replays part p (core_attn, mlp, layernorm). With sequence
// parallelism it also gathers the norm outputs again (Megatron keeps only this rank's rows of them).
bool selective_replays(const RecomputeConfig& r, Part p) {
  switch (p) {
    case Part::Core: return r.core_attn;
    case Part::Mlp: return r.mlp;
    case Part::Moe: return r.moe;
    case Part::MoeAct: return r.moe || r.moe_act;
    case Part::Norm1:
    case Part::Norm2: return r.layernorm;
    case Part::Norm1Full:
    case Part::Norm2Full: return true;  // carved only with sequence parallelism
    default: return false;
  }
}

// One full-recompute workspace slot: a layer's input (interior layers of a group) and its activations,
// for the larger of a dense and an MoE layer.
std::size_t full_recompute_slot_bytes(const StageConfig& c, const LocalSizes& s, std::size_t es) {
  std::size_t slot_bytes = 0;
  for (bool moe : {false, true}) {
    if (moe && !c.moe.enabled()) continue;
    Carver slot(nullptr);
    slot.take(std::size_t(s.N_seq) * s.C, es);
    LayerActivations probe{};
    carve_layer(
        probe, [&](Part) -> Carver& { return slot; }, c, s, es, moe);
    slot_bytes = std::max(slot_bytes, slot.used());
  }
  return slot_bytes;
}

// Per-layer activations: kept layers in the arena; a layer of a full-recompute group in workspace slot
// (its place in the group), all of it (a replay norms the group's input itself); selective: the
// replayed parts in one workspace slot shared by every layer. What an offloaded layer would keep in the
// arena goes to its unit's staging slot instead (activation_offload.h).
class LayerCarver {
 public:
  LayerCarver(StageActivations& a, Carver& ws, const StageConfig& c, const LocalSizes& s, std::size_t es)
      : a_(a), ws_(ws), c_(c), s_(s), es_(es), r_(c.recompute), L_(c.num_local_layers()) {
    first_ = recompute_group_first(r_, L_);
    slot_bytes_ = full_recompute_slot_bytes(c, s, es);
    // --distribute-saved-activations: the groups' inputs are gathered into two workspace buffers after
    // the slots, alternating, so that a replay's output (the next group's input) never overwrites its input.
    split_ = r_.full() && r_.distribute_saved_activations;
    gathered_at_ = checked_mul(std::size_t(recompute_max_group(r_, L_)), slot_bytes_, Carver::kWhat);
    input_bytes_ = checked_add(checked_mul(input_elems(), es, Carver::kWhat), 255, Carver::kWhat) / 256 * 256;
    a.saved_part_elems = split_ ? input_elems() / std::size_t(c.tp_size) : 0;
    a.saved_input_part.assign(L_, nullptr);
    a.res.assign(L_ + 1, nullptr);
    a.layers.assign(L_, LayerActivations{});
    a.moe.assign(L_, MoeLayerHost{});
  }

  // What layer li keeps, taken from `ar` (the arena, or its unit's staging slot).
  void carve(int li, Carver& ar) {
    const bool moe = c_.moe.is_moe_layer(c_.layer_first + li);
    if (first_[li] >= 0)
      carve_group_layer(li, ar, moe);
    else
      carve_kept_layer(li, ar, moe);
  }

  // The bytes layer li keeps (a measuring carve, which the real one then redoes).
  std::size_t kept_bytes(int li) {
    Carver measure(nullptr);
    const int groups_before = groups_;
    carve(li, measure);
    groups_ = groups_before;
    return measure.used();
  }

 private:
  std::size_t input_elems() const { return std::size_t(s_.N_seq) * s_.C; }  // a layer's input (N_seq, C)

  // A layer of a full-recompute group: all of it in its workspace slot. The group's first layer keeps its
  // input in `ar` (split over TP: a part there, gathered into a workspace buffer for the replay).
  void carve_group_layer(int li, Carver& ar, bool moe) {
    const int j = li - first_[li];
    ws_.seek(checked_mul(std::size_t(j), slot_bytes_, Carver::kWhat));
    void* input = ws_.take(input_elems(), es_);
    carve_layer(
        a_.layers[li], [&](Part) -> Carver& { return ws_; }, c_, s_, es_, moe);
    if (j > 0) {
      a_.res[li] = input;
    } else if (!split_) {
      a_.res[li] = ar.take(input_elems(), es_);
    } else {
      a_.saved_input_part[li] = ar.take(a_.saved_part_elems, es_);
      ws_.seek(gathered_at_ + std::size_t(groups_++ % 2) * input_bytes_);
      a_.res[li] = ws_.take(input_elems(), es_);
    }
  }

  // A kept layer: its input and activations in `ar`, but the parts selective recomputation replays in the
  // workspace.
  void carve_kept_layer(int li, Carver& ar, bool moe) {
    a_.res[li] = ar.take(input_elems(), es_);
    ws_.seek(0);
    carve_layer(
        a_.layers[li], [&](Part p) -> Carver& { return r_.selective() && selective_replays(r_, p) ? ws_ : ar; }, c_, s_,
        es_, moe);
  }

  StageActivations& a_;
  Carver& ws_;
  const StageConfig& c_;
  const LocalSizes& s_;
  const std::size_t es_;
  const RecomputeConfig& r_;
  const int L_;
  std::vector<int> first_;  // per layer: the first layer of its full-recompute group, or -1
  std::size_t slot_bytes_ = 0, gathered_at_ = 0, input_bytes_ = 0;
  bool split_ = false;
  int groups_ = 0;  // split group inputs gathered so far (they alternate between two buffers)
};

// The layers' activations, in layer order; an offloaded layer in its unit's staging slot (K slots of the
// largest unit's bytes, measured first), the others in the arena; then the last layer's output.
void carve_layers(StageActivations& a, Carver& arena, Carver& ws, Carver& staging, const StageConfig& c,
                  const LocalSizes& s, std::size_t es) {
  const int L = c.num_local_layers();
  LayerCarver layers(a, ws, c, s, es);
  const std::vector<int> unit = offload_units(c);
  const int slots = offload_slots(c);
  std::size_t unit_bytes = 0;
  for (int li = 0; li < L; ++li)
    if (unit[li] >= 0) unit_bytes = std::max(unit_bytes, layers.kept_bytes(li));
  a.offload_unit_bytes = unit_bytes;
  a.offload_units = offload_unit_count(c);
  for (int li = 0; li < L; ++li) {
    if (unit[li] < 0) {
      layers.carve(li, arena);
      continue;
    }
    staging.seek(std::size_t(unit[li] % slots) * unit_bytes);
    layers.carve(li, staging);
    staging.seek(checked_mul(std::size_t(slots), unit_bytes, Carver::kWhat));  // the high mark: every slot
    staging.take(0);
  }
  a.res[L] = arena.take(std::size_t(s.N_seq) * s.C, es);
}

// The last stage's final norm, logits and cross-entropy buffers (null elsewhere).
void carve_head(StageActivations& a, const TypedTake& t, const StageConfig& c, const LocalSizes& s) {
  if (!c.has_head) {
    a.lnf = a.lnf_full = a.logits = nullptr;
    a.lnf_mean = a.lnf_rstd = a.losses = a.dloss = nullptr;
    a.xent = XentStats{nullptr, nullptr, nullptr};
    return;
  }
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  a.lnf = t.act(Ns * C);
  a.lnf_mean = c.normalization == Normalization::LayerNorm ? t.f32(Ns) : nullptr;
  a.lnf_rstd = t.f32(Ns);
  a.lnf_full = c.sequence_parallel ? t.act(N * C) : a.lnf;
  a.logits = t.act(N * std::size_t(s.V));
  a.xent = XentStats{t.f32(N), t.f32(N), t.f32(N)};
  a.losses = t.f32(N);
  a.dloss = t.f32(N);
}

// The MoE layers' backward scratch, shared by every layer (null without MoE layers).
void carve_moe_backward(StageActivations& a, const TypedTake& t, const StageConfig& c, const LocalSizes& s) {
  if (c.moe.num_moe_layers() == 0) {
    a.logits_act = a.dmoe_rows = a.dmoe_rows2 = a.dmoe_fc1 = a.dmoe_act = a.moe_dx = nullptr;
    a.dshared_fc1 = a.dshared_act = nullptr;
    a.shared_gate = a.dshared_gate = nullptr;
    a.dprobs = a.dscores = a.dlogits = nullptr;
    return;
  }
  const std::size_t N = s.N, C = s.C, E = s.E, R = s.moe_rows, RX = s.moe_expert_rows;
  a.logits_act = t.act(N * E);
  a.dprobs = t.f32(N * s.K);
  a.dscores = t.f32(N * E);
  a.dlogits = t.f32(N * E);
  a.dmoe_rows = t.act(R * C);
  a.dmoe_rows2 = t.act(RX * C);
  a.dmoe_fc1 = t.act(RX * s.FE1);
  a.dmoe_act = c.gated_mlp() ? t.act(RX * s.FE) : a.dmoe_fc1;
  a.moe_dx = t.act(N * C);
  a.dshared_fc1 = s.FS > 0 ? t.act(N * s.FS1) : nullptr;
  a.dshared_act = s.FS > 0 && c.gated_mlp() ? t.act(N * s.FS) : a.dshared_fc1;
  const bool gate = s.FS > 0 && c.moe.shared_expert_gate;
  a.shared_gate = gate ? t.act(N) : nullptr;
  a.dshared_gate = gate ? t.act(N) : nullptr;
}

// The whole stage, in address order: the batch, the layers, the embedding output, the head, then the
// backward scratch.
void carve(StageActivations& a, Carver& cv, Carver& ws, Carver& staging, const StageConfig& c, const LocalSizes& s,
           std::size_t es) {
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  const bool sp = c.sequence_parallel;
  const TypedTake t{cv, es};
  a.tokens = t.i32(N);
  a.targets = t.i32(N);
  a.positions = t.i32(N);
  a.segment_ids = t.i32(N);
  carve_layers(a, cv, ws, staging, c, s, es);
  a.emb_full = c.has_embedding ? t.act(N * C) : nullptr;
  carve_head(a, t, c, s);
  a.tmp_full = t.act(N * C);
  a.tmp_local = sp ? t.act(Ns * C) : a.tmp_full;
  a.tmp2_local = t.act(Ns * C);
  a.dres = t.act(Ns * C);
  a.dtmp_local = t.act(Ns * C);
  a.dtmp_full = sp ? t.act(N * C) : a.dtmp_local;
  a.dln_full = t.act(N * C);
  a.dln2_full = c.parallel_residual == ParallelResidual::TwoNorms ? t.act(N * C) : nullptr;
  a.dln_local = sp ? t.act(Ns * C) : a.dln_full;
  a.dqkv = t.act(N * s.QKV);
  a.datty = t.act(N * s.ATT);
  a.dfc1 = t.act(N * s.F1);
  a.dact = c.gated_mlp() ? t.act(N * s.F) : a.dfc1;  // GELU backward runs in place on the fc1-sized buffer
  carve_moe_backward(a, t, c, s);
}

}  // namespace

StageActivations::StageActivations(Backend& backend, const StageConfig& c, const LocalSizes& s, void* replay_workspace,
                                   void* offload_staging)
    : be(&backend) {
  const std::size_t es = dtype_size(backend.compute_dtype());
  Carver measure(nullptr), measure_ws(nullptr), measure_staging(nullptr);
  carve(*this, measure, measure_ws, measure_staging, c, s, es);
  arena_bytes = measure.used();
  check(measure_ws.used() == 0 || replay_workspace != nullptr,
        "StageActivations: recomputation needs the stage's replay workspace");
  check(measure_staging.used() == 0 || offload_staging != nullptr,
        "StageActivations: activation offloading needs the stage's staging slots");
  arena = backend.alloc(arena_bytes);
  Carver real(static_cast<char*>(arena)), real_ws(static_cast<char*>(replay_workspace)),
      real_staging(static_cast<char*>(offload_staging));
  carve(*this, real, real_ws, real_staging, c, s, es);
  backend.fill_zero(arena, arena_bytes);
  host_mask.assign(s.N, 0.0f);
  host_losses.assign(s.N, 0.0f);
}

StageActivations::StageActivations(std::size_t elem_bytes, const StageConfig& c, const LocalSizes& s, MeasureOnly)
    : be(nullptr) {
  Carver measure(nullptr), measure_ws(nullptr), measure_staging(nullptr);
  carve(*this, measure, measure_ws, measure_staging, c, s, elem_bytes);
  arena_bytes = measure.used();
  workspace_bytes_ = measure_ws.used();
  staging_bytes_ = measure_staging.used();
}

StageActivations::~StageActivations() {
  if (arena) be->release(arena);
}

std::size_t StageActivations::arena_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  return StageActivations(dtype_size(compute), c, s, MeasureOnly{}).arena_bytes;
}

std::size_t StageActivations::offload_staging_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  return StageActivations(dtype_size(compute), c, s, MeasureOnly{}).staging_bytes_;
}

std::size_t StageActivations::offload_unit_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  return StageActivations(dtype_size(compute), c, s, MeasureOnly{}).offload_unit_bytes;
}

std::size_t StageActivations::offload_host_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  const StageActivations a(dtype_size(compute), c, s, MeasureOnly{});
  return a.offload_unit_bytes * std::size_t(a.offload_units);
}

std::size_t StageActivations::replay_workspace_bytes_for(DType compute, const StageConfig& c, const LocalSizes& s) {
  return StageActivations(dtype_size(compute), c, s, MeasureOnly{}).workspace_bytes_;
}

}  // namespace gptrain
