#include "core/model/stage_activations.h"

#include <cstddef>

namespace gptrain {

namespace {

// Carves aligned buffers out of one allocation: a first pass with base == null only measures.
class Carver {
 public:
  explicit Carver(char* base) : base_(base) {}
  void* take(std::size_t bytes) {
    const std::size_t at = used_;
    used_ += (bytes + 255) / 256 * 256;
    return base_ ? base_ + at : nullptr;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

void carve(StageActivations& a, Carver& cv, const ModelConfig& c, const LocalSizes& s, std::size_t es) {
  const std::size_t N = s.N, Ns = s.N_seq, C = s.C;
  const bool sp = c.sequence_parallel;
  auto act = [&](std::size_t n) { return cv.take(n * es); };
  auto f32 = [&](std::size_t n) { return static_cast<float*>(cv.take(n * sizeof(float))); };
  auto i32 = [&](std::size_t n) { return static_cast<int32_t*>(cv.take(n * sizeof(int32_t))); };
  a.tokens = i32(N);
  a.targets = i32(N);
  a.positions = i32(N);
  a.segment_ids = i32(N);
  const int L = c.num_local_layers();
  a.res.assign(L + 1, nullptr);
  for (auto& r : a.res) r = act(Ns * C);
  a.layers.assign(L, LayerActivations{});
  const bool ln = c.normalization == Normalization::LayerNorm;
  for (auto& la : a.layers) {
    la.ln1 = act(Ns * C);
    la.ln1_mean = ln ? f32(Ns) : nullptr;
    la.ln1_rstd = f32(Ns);
    la.ln1_full = sp ? act(N * C) : la.ln1;
    la.qkv = act(N * s.QKV);
    la.atty = act(N * s.ATT);
    la.lse = f32(std::size_t(s.B) * s.NH * s.T);
    la.res_mid = c.parallel_residual == ParallelResidual::None ? act(Ns * C) : nullptr;
    if (c.parallel_residual == ParallelResidual::SharedNorm) {
      la.ln2 = la.ln1, la.ln2_mean = la.ln1_mean, la.ln2_rstd = la.ln1_rstd, la.ln2_full = la.ln1_full;
    } else {
      la.ln2 = act(Ns * C);
      la.ln2_mean = ln ? f32(Ns) : nullptr;
      la.ln2_rstd = f32(Ns);
      la.ln2_full = sp ? act(N * C) : la.ln2;
    }
    la.fc1 = act(N * s.F1);
    la.act = act(N * s.F);
  }
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
}

}  // namespace

StageActivations::StageActivations(Backend& backend, const ModelConfig& c, const LocalSizes& s) : be(&backend) {
  const std::size_t es = dtype_size(backend.compute_dtype());
  Carver measure(nullptr);
  carve(*this, measure, c, s, es);
  arena_bytes = measure.used();
  arena = backend.alloc(arena_bytes);
  Carver real(static_cast<char*>(arena));
  carve(*this, real, c, s, es);
  backend.fill_zero(arena, arena_bytes);
  host_mask.assign(s.N, 0.0f);
  host_losses.assign(s.N, 0.0f);
}

StageActivations::StageActivations(std::size_t elem_bytes, const ModelConfig& c, const LocalSizes& s, MeasureOnly)
    : be(nullptr) {
  Carver measure(nullptr);
  carve(*this, measure, c, s, elem_bytes);
  arena_bytes = measure.used();
}

StageActivations::~StageActivations() {
  if (arena) be->release(arena);
}

std::size_t StageActivations::arena_bytes_for(DType compute, const ModelConfig& c, const LocalSizes& s) {
  return StageActivations(dtype_size(compute), c, s, MeasureOnly{}).arena_bytes;
}

}  // namespace gptrain
