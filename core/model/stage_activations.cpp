#include "core/model/stage_activations.h"

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
    at_ += (bytes + 255) / 256 * 256;
    used_ = std::max(used_, at_);
    return base_ ? base_ + at : nullptr;
  }
  void seek(std::size_t at) { at_ = at; }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t at_ = 0, used_ = 0;
};

// The pieces of a layer's saved activations, as recomputation keeps or replays them.
enum class Part { Norm1, Norm1Full, Qkv, Core, ResMid, Norm2, Norm2Full, Mlp, Moe, MoeAct };

template <class Pick>
void carve_layer(LayerActivations& la, Pick&& where, const StageConfig& c, const LocalSizes& s, std::size_t es,
                 bool moe) {
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  const bool sp = c.sequence_parallel;
  const bool ln = c.normalization == Normalization::LayerNorm;
  auto act = [&](Part p, std::size_t n) { return where(p).take(n * es); };
  auto f32 = [&](Part p, std::size_t n) { return static_cast<float*>(where(p).take(n * sizeof(float))); };
  // A norm's output (this rank's rows), statistics and, with sequence parallelism, gathered output.
  auto norm = [&](Part p, Part full, auto& y, float*& mean, float*& rstd, auto& y_full) {
    y = act(p, Ns * C);
    mean = ln ? f32(p, Ns) : nullptr;
    rstd = f32(p, Ns);
    y_full = sp ? act(full, N * C) : y;
  };
  norm(Part::Norm1, Part::Norm1Full, la.ln1, la.ln1_mean, la.ln1_rstd, la.ln1_full);
  la.qkv = act(Part::Qkv, N * s.QKV);
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
  auto i32 = [&](std::size_t n) { return static_cast<int32_t*>(where(Part::Moe).take(n * sizeof(int32_t))); };
  la.router_logits = f32(Part::Moe, N * E);
  la.router_probs = f32(Part::Moe, N * K);
  la.router_experts = i32(N * K);
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

// Per-layer activations: kept layers in the arena; a layer of a full-recompute group in workspace slot
// (its place in the group), all of it (a replay norms the group's input itself); selective: the
// replayed parts in one workspace slot shared by every layer. What an offloaded layer would keep in the
// arena goes to its unit's staging slot instead (activation_offload.h).
void carve_layers(StageActivations& a, Carver& arena, Carver& ws, Carver& staging, const StageConfig& c,
                  const LocalSizes& s, std::size_t es) {
  const int L = c.num_local_layers();
  const RecomputeConfig& r = c.recompute;
  const std::vector<int> first = recompute_group_first(r, L);
  const std::size_t Ns = s.N_seq, C = s.C;
  // One full-recompute slot: the layer's input (interior layers of a group) and its activations.
  std::size_t slot_bytes = 0;
  for (bool moe : {false, true}) {
    if (moe && !c.moe.enabled()) continue;
    Carver slot(nullptr);
    slot.take(Ns * C * es);
    LayerActivations probe{};
    carve_layer(
        probe, [&](Part) -> Carver& { return slot; }, c, s, es, moe);
    slot_bytes = std::max(slot_bytes, slot.used());
  }

  // --distribute-saved-activations: the groups' inputs are gathered into two workspace buffers after
  // the slots, alternating, so that a replay's output (the next group's input) never overwrites its input.
  const bool split = r.full() && r.distribute_saved_activations;
  const std::size_t gathered_at = std::size_t(recompute_max_group(r, L)) * slot_bytes;
  const std::size_t input_bytes = (Ns * C * es + 255) / 256 * 256;
  a.saved_part_elems = split ? Ns * C / std::size_t(c.tp_size) : 0;
  a.saved_input_part.assign(L, nullptr);
  int groups = 0;

  a.res.assign(L + 1, nullptr);
  a.layers.assign(L, LayerActivations{});
  a.moe.assign(L, MoeLayerHost{});
  // What layer li keeps, taken from `ar` (the arena, or its unit's staging slot).
  auto carve_one = [&](int li, Carver& ar) {
    LayerActivations& la = a.layers[li];
    const bool moe = c.moe.is_moe_layer(c.layer_first + li);
    if (first[li] >= 0) {
      const int j = li - first[li];
      ws.seek(std::size_t(j) * slot_bytes);
      void* input = ws.take(Ns * C * es);
      carve_layer(
          la, [&](Part) -> Carver& { return ws; }, c, s, es, moe);
      if (j > 0) {
        a.res[li] = input;
      } else if (!split) {
        a.res[li] = ar.take(Ns * C * es);
      } else {
        a.saved_input_part[li] = ar.take(a.saved_part_elems * es);
        ws.seek(gathered_at + std::size_t(groups++ % 2) * input_bytes);
        a.res[li] = ws.take(Ns * C * es);
      }
    } else {
      a.res[li] = ar.take(Ns * C * es);
      ws.seek(0);
      carve_layer(
          la, [&](Part p) -> Carver& { return r.selective() && selective_replays(r, p) ? ws : ar; }, c, s, es, moe);
    }
  };
  const std::vector<int> unit = offload_units(c);
  const int slots = offload_slots(c);
  // One unit's bytes: the largest any offloaded layer keeps (measured first; the carve is redone below).
  std::size_t unit_bytes = 0;
  for (int li = 0; li < L; ++li) {
    if (unit[li] < 0) continue;
    Carver measure(nullptr);
    const int groups_before = groups;
    carve_one(li, measure);
    groups = groups_before;
    unit_bytes = std::max(unit_bytes, measure.used());
  }
  a.offload_unit_bytes = unit_bytes;
  a.offload_units = offload_unit_count(c);
  for (int li = 0; li < L; ++li) {
    if (unit[li] < 0) {
      carve_one(li, arena);
      continue;
    }
    staging.seek(std::size_t(unit[li] % slots) * unit_bytes);
    carve_one(li, staging);
    staging.seek(std::size_t(slots) * unit_bytes);  // the high mark: every slot
    staging.take(0);
  }
  a.res[L] = arena.take(Ns * C * es);
}

void carve(StageActivations& a, Carver& cv, Carver& ws, Carver& staging, const StageConfig& c, const LocalSizes& s,
           std::size_t es) {
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  const bool sp = c.sequence_parallel;
  auto act = [&](std::size_t n) { return cv.take(n * es); };
  auto f32 = [&](std::size_t n) { return static_cast<float*>(cv.take(n * sizeof(float))); };
  auto i32 = [&](std::size_t n) { return static_cast<int32_t*>(cv.take(n * sizeof(int32_t))); };
  a.tokens = i32(N);
  a.targets = i32(N);
  a.positions = i32(N);
  a.segment_ids = i32(N);
  carve_layers(a, cv, ws, staging, c, s, es);
  const bool ln = c.normalization == Normalization::LayerNorm;
  a.emb_full = c.has_embedding ? act(N * C) : nullptr;
  if (c.has_head) {
    a.lnf = act(Ns * C);
    a.lnf_mean = ln ? f32(Ns) : nullptr;
    a.lnf_rstd = f32(Ns);
    a.lnf_full = sp ? act(N * C) : a.lnf;
    a.logits = act(N * std::size_t(s.V));
    a.xent = XentStats{f32(N), f32(N), f32(N)};
    a.losses = f32(N);
    a.dloss = f32(N);
  } else {
    a.lnf = a.lnf_full = a.logits = nullptr;
    a.lnf_mean = a.lnf_rstd = a.losses = a.dloss = nullptr;
    a.xent = XentStats{nullptr, nullptr, nullptr};
  }
  a.tmp_full = act(N * C);
  a.tmp_local = sp ? act(Ns * C) : a.tmp_full;
  a.tmp2_local = act(Ns * C);
  a.dres = act(Ns * C);
  a.dtmp_local = act(Ns * C);
  a.dtmp_full = sp ? act(N * C) : a.dtmp_local;
  a.dln_full = act(N * C);
  a.dln2_full = c.parallel_residual == ParallelResidual::TwoNorms ? act(N * C) : nullptr;
  a.dln_local = sp ? act(Ns * C) : a.dln_full;
  a.dqkv = act(N * s.QKV);
  a.datty = act(N * s.ATT);
  a.dfc1 = act(N * s.F1);
  a.dact = c.swiglu ? act(N * s.F) : a.dfc1;  // GELU backward runs in place on the fc1-sized buffer
  if (c.moe.num_moe_layers() > 0) {
    const std::size_t E = s.E, R = s.moe_rows, RX = s.moe_expert_rows;
    a.logits_act = act(N * E);
    a.dprobs = f32(N * s.K);
    a.dscores = f32(N * E);
    a.dlogits = f32(N * E);
    a.dmoe_rows = act(R * C);
    a.dmoe_rows2 = act(RX * C);
    a.dmoe_fc1 = act(RX * s.FE1);
    a.dmoe_act = c.swiglu ? act(RX * s.FE) : a.dmoe_fc1;
    a.moe_dx = act(N * C);
    a.dshared_fc1 = s.FS > 0 ? act(N * s.FS1) : nullptr;
    a.dshared_act = s.FS > 0 && c.swiglu ? act(N * s.FS) : a.dshared_fc1;
  } else {
    a.logits_act = a.dmoe_rows = a.dmoe_rows2 = a.dmoe_fc1 = a.dmoe_act = a.moe_dx = nullptr;
    a.dshared_fc1 = a.dshared_act = nullptr;
    a.dprobs = a.dscores = a.dlogits = nullptr;
  }
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
