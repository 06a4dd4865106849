#include "core/optim/adamw.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "kernels/adamw/adamw.h"
#include "kernels/common/dtype_math.h"
#include "kernels/lion/lion.h"
#include "kernels/sgd/sgd.h"

#include <algorithm>
#include <cmath>

namespace gptrain {

namespace {

// Where the first `host` updated elements end in the local state order (pieces sorted by local offset).
std::size_t host_cut(const std::vector<AdamW::Piece>& pieces, double fraction) {
  std::size_t updated = 0;
  for (const AdamW::Piece& p : pieces) updated += p.hi - p.lo;
  const auto host = static_cast<std::size_t>(std::llround(fraction * double(updated)));
  if (host == 0) return 0;
  std::size_t seen = 0;
  for (const AdamW::Piece& p : pieces) {
    const std::size_t n = p.hi - p.lo;
    if (seen + n >= host) return p.local + (host - seen);
    seen += n;
  }
  return pieces.empty() ? 0 : pieces.back().local + (pieces.back().hi - pieces.back().lo);
}

}  // namespace

std::vector<std::string> optimizer_state_names(UpdateRule rule) {
  if (rule == UpdateRule::sgd) return {"momentum_buffer"};
  return {"exp_avg", "exp_avg_sq"};
}

AdamW::AdamW(Backend& be, void* params, std::size_t total, std::size_t num_decay, AdamWHyper hyper)
    : AdamW(be, params, total, decay_split_ranges(total, num_decay), hyper, {Piece{0, total, 0}}, total) {}

AdamW::AdamW(Backend& be, void* params, std::size_t total, std::vector<ParamGroupRange> groups, AdamWHyper hyper,
             std::vector<Piece> pieces, std::size_t local_total, double host_fraction)
    : be_(be),
      params_(params),
      total_(total),
      groups_(std::move(groups)),
      hyper_(hyper),
      pieces_(std::move(pieces)),
      local_total_(local_total) {
  std::size_t at = 0;
  for (const ParamGroupRange& g : groups_) {
    check(g.lo == at && g.lo < g.hi, "AdamW: group range [{}, {}) does not continue at {}", g.lo, g.hi, at);
    at = g.hi;
  }
  check(at == total_, "AdamW: the group ranges cover {} of {} parameters", at, total_);
  std::size_t local_end = 0;
  for (const Piece& p : pieces_) {
    check(p.lo <= p.hi && p.hi <= total_ && p.local + (p.hi - p.lo) <= local_total_,
          "AdamW: piece [{}, {}) at {} does not fit {} parameters / {} state elements", p.lo, p.hi, p.local, total_,
          local_total_);
    check(p.local >= local_end, "AdamW: pieces out of local order at [{}, {})", p.lo, p.hi);
    local_end = p.local + (p.hi - p.lo);
  }
  check(host_fraction >= 0.0 && host_fraction <= 1.0, "AdamW: host fraction {} outside [0, 1]", host_fraction);
  cut_ = host_cut(pieces_, host_fraction);
  for (const DType d : {hyper_.exp_avg_dtype, hyper_.exp_avg_sq_dtype})
    check(d == DType::F32 || d == DType::BF16, "AdamW: moments stored as {}: only fp32 or bf16", dtype_name(d));
  const bool two_moments = optimizer_state_names(hyper_.rule).size() > 1;
  check(two_moments || (hyper_.exp_avg_dtype == DType::F32 && hyper_.exp_avg_sq_dtype == DType::F32),
        "AdamW: --optimizer sgd keeps its momentum in fp32");
  check(
      hyper_.rule != UpdateRule::lion || (hyper_.exp_avg_dtype == DType::F32 && hyper_.exp_avg_sq_dtype == DType::F32),
      "AdamW: --optimizer lion keeps its moments in fp32");
  if (hyper_.stochastic_rounding) {
    check(hyper_.rule == UpdateRule::adamw, "--bf16-stochastic-rounding: only with --optimizer adam");
    check(cut_ == 0, "--bf16-stochastic-rounding: not with --optimizer-cpu-offload");
    check(be_.compute_dtype() == DType::F32 || be_.compute_dtype() == DType::BF16,
          "--bf16-stochastic-rounding: parameters in {}: only bf16 (--bf16) or fp32", dtype_name(be_.compute_dtype()));
    runs_ = {RoundingRun{0, total_, 0, 0, std::max<std::size_t>(total_, 1), std::max<std::size_t>(total_, 1)}};
  }
  // Stochastic rounding keeps no master: the bf16 parameters are the optimizer's weights.
  owns_master_ = be_.compute_dtype() != DType::F32 && !hyper_.stochastic_rounding;
  const std::size_t dev = local_total_ - cut_;
  // Each array starts 4-byte aligned (a bf16 array of odd length must not misalign the next one); fp32
  // state takes the bytes it always did.
  auto padded = [](std::size_t bytes) { return (bytes + 3) / 4 * 4; };
  const std::size_t master_bytes = owns_master_ ? padded(dev * 4) : 0;
  const std::size_t m_bytes = padded(dev * dtype_size(hyper_.exp_avg_dtype));
  const std::size_t v_bytes = two_moments ? padded(dev * dtype_size(hyper_.exp_avg_sq_dtype)) : 0;
  const std::size_t bytes = master_bytes + m_bytes + v_bytes;
  state_ = be_.alloc(std::max<std::size_t>(bytes, 1));
  be_.fill_zero(state_, bytes);
  char* base = static_cast<char*>(state_);
  master_ = owns_master_ ? reinterpret_cast<float*>(base) : nullptr;
  m_ = base + master_bytes;
  v_ = two_moments ? base + master_bytes + m_bytes : nullptr;
  host_m_.assign(cut_ * dtype_size(hyper_.exp_avg_dtype), 0);
  host_v_.assign(two_moments ? cut_ * dtype_size(hyper_.exp_avg_sq_dtype) : 0, 0);
  host_master_.assign(cut_, 0.0f);
  host_grad_.assign(cut_, 0.0f);
  const std::size_t es = dtype_size(be_.compute_dtype());
  // The masters start as the fp32 values of the parameters (on the host: always a copy of its own).
  for_each_range([&](std::size_t a, std::size_t l, std::size_t n, bool host) {
    const void* param = static_cast<const char*>(params_) + a * es;
    if (host)
      params_to_host_master(a, l, n);
    else if (owns_master_)
      be_.convert(master_ + (l - cut_), DType::F32, param, be_.compute_dtype(), n);
  });
  round_params_to_bf16();
}

// Stochastic rounding on an fp32 backend: the parameters start (and resume) as bf16 values, rounded to
// nearest; the whole buffer, so the tensors other ranks update agree before their first gather.
void AdamW::round_params_to_bf16() {
  if (!hyper_.stochastic_rounding || be_.compute_dtype() != DType::F32 || total_ == 0) return;
  std::vector<float> h(total_);
  be_.copy_to_host(h.data(), params_, total_ * 4);
  for (float& x : h) x = bf16_to_f32(f32_to_bf16(x));
  be_.copy_to_device(params_, h.data(), total_ * 4);
}

AdamW::~AdamW() { be_.release(state_); }

DType AdamW::state_dtype(int which) const {
  return which == 0 ? hyper_.exp_avg_dtype : which == 1 ? hyper_.exp_avg_sq_dtype : DType::F32;
}

void* AdamW::device_state(int which, std::size_t l) const {
  void* base = which == 0 ? m_ : which == 1 ? v_ : master_;
  return static_cast<char*>(base) + (l - cut_) * dtype_size(state_dtype(which));
}

void* AdamW::host_state(int which, std::size_t l) {
  if (which == 2) return host_master_.data() + l;
  std::vector<unsigned char>& h = which == 0 ? host_m_ : host_v_;
  return h.data() + l * dtype_size(state_dtype(which));
}

void AdamW::for_each_range(const std::function<void(std::size_t, std::size_t, std::size_t, bool)>& f,
                           bool by_group) const {
  auto split = [&](std::size_t a, std::size_t l, std::size_t n) {
    if (l < cut_) {
      const std::size_t h = std::min(n, cut_ - l);
      f(a, l, h, true);
      a += h, l += h, n -= h;
    }
    if (n > 0) f(a, l, n, false);
  };
  for (const Piece& p : pieces_) {
    if (!by_group) {
      if (p.hi > p.lo) split(p.lo, p.local, p.hi - p.lo);
      continue;
    }
    for (const ParamGroupRange& g : groups_) {
      const std::size_t a = std::max(p.lo, g.lo), b = std::min(p.hi, g.hi);
      if (a < b) split(a, p.local + (a - p.lo), b - a);
    }
  }
}

const ParamGroupRange& AdamW::group_of(std::size_t a) const {
  for (const ParamGroupRange& g : groups_)
    if (a >= g.lo && a < g.hi) return g;
  fail("AdamW: parameter {} is in no group", a);
}

void AdamW::params_to_host_master(std::size_t a, std::size_t l, std::size_t n) {
  const DType dt = be_.compute_dtype();
  const char* src = static_cast<const char*>(params_) + a * dtype_size(dt);
  if (dt == DType::F32) {
    be_.copy_to_host(host_master_.data() + l, src, n * 4);
    return;
  }
  std::vector<uint16_t> h(n);
  be_.copy_to_host(h.data(), src, n * 2);
  for (std::size_t i = 0; i < n; ++i) host_master_[l + i] = dt == DType::BF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
}

void AdamW::host_master_to_params(std::size_t a, std::size_t l, std::size_t n) {
  const DType dt = be_.compute_dtype();
  char* dst = static_cast<char*>(params_) + a * dtype_size(dt);
  if (dt == DType::F32) {
    be_.copy_to_device(dst, host_master_.data() + l, n * 4);
    return;
  }
  std::vector<uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i)
    h[i] = dt == DType::BF16 ? f32_to_bf16(host_master_[l + i]) : f32_to_f16(host_master_[l + i]);
  be_.copy_to_device(dst, h.data(), n * 2);
}

void AdamW::step(const float* grads, float lr, float decoupled_lr, float weight_decay, float grad_scale) {
  ++steps_;
  const int step = int(steps_);
  const std::size_t es = dtype_size(be_.compute_dtype());
  const AdamWHyper& h = hyper_;
  // fp32 moments keep the plain fp32 op (the losses of fp32 runs are those of before the storage dtypes).
  const bool fp32_moments = h.exp_avg_dtype == DType::F32 && h.exp_avg_sq_dtype == DType::F32;
  check(cut_ == 0 || !grads_global_, "AdamW: offloaded state needs locally indexed gradients");
  if (cut_ > 0) be_.copy_to_host(host_grad_.data(), grads, cut_ * sizeof(float));
  for_each_range(
      [&](std::size_t a, std::size_t l, std::size_t n, bool host) {
        const ParamGroupRange& g = group_of(a);
        const float glr = g.decoupled_lr ? decoupled_lr : lr, wd = g.decay ? weight_decay : 0.0f;
        const bool lion = h.rule == UpdateRule::lion && g.matrix;
        if (host) {
          // The CPU twin on the host state, then the parameters from the updated masters.
          ProfileRange range("optimizer-host");
          if (h.rule == UpdateRule::sgd)
            cpu::sgd_update(host_master_.data() + l, nullptr, host_grad_.data() + l,
                            static_cast<float*>(host_state(0, l)), n, glr, h.sgd_momentum, wd, grad_scale);
          else if (lion)
            cpu::lion_update(host_master_.data() + l, nullptr, host_grad_.data() + l,
                             static_cast<float*>(host_state(0, l)), n, glr, h.lion_beta1, h.lion_beta2, wd, grad_scale);
          else if (fp32_moments)
            cpu::adamw_update(host_master_.data() + l, nullptr, host_grad_.data() + l,
                              static_cast<float*>(host_state(0, l)), static_cast<float*>(host_state(1, l)), n, glr,
                              h.beta1, h.beta2, h.eps, wd, step, grad_scale);
          else
            cpu::adamw_update_stored(host_master_.data() + l, nullptr, host_grad_.data() + l,
                                     {host_state(0, l), h.exp_avg_dtype, host_state(1, l), h.exp_avg_sq_dtype}, n, glr,
                                     h.beta1, h.beta2, h.eps, wd, step, grad_scale);
          host_master_to_params(a, l, n);
          return;
        }
        // fp32: the parameters are the masters, updated in place at their global offset.
        const std::size_t d = l - cut_;
        float* master = owns_master_ ? master_ + d : static_cast<float*>(params_) + a;
        void* param = owns_master_ ? static_cast<char*>(params_) + a * es : nullptr;
        const float* gr = grads + (grads_global_ ? a : l);
        if (h.stochastic_rounding) {
          // The range cut at the tensors' runs: each call draws from one run's index map.
          const AdamWMoments mv{device_state(0, l), h.exp_avg_dtype, device_state(1, l), h.exp_avg_sq_dtype};
          for (const RoundingRun& r : runs_) {
            const std::size_t lo = std::max(a, r.lo), hi = std::min(a + n, r.hi);
            if (lo >= hi) continue;
            const std::size_t k = lo - a;
            const AdamWMoments at{static_cast<char*>(mv.m) + k * dtype_size(mv.m_dtype), mv.m_dtype,
                                  static_cast<char*>(mv.v) + k * dtype_size(mv.v_dtype), mv.v_dtype};
            const StochasticRounding sr{h.rounding_seed, r.tensor_key,  lo - r.lo,
                                        r.base,          r.chunk_local, r.chunk_global};
            be_.adamw_update_stochastic(static_cast<char*>(params_) + lo * es, gr + k, at, hi - lo, glr, h.beta1,
                                        h.beta2, h.eps, wd, step, grad_scale, sr);
          }
        } else if (h.rule == UpdateRule::sgd)
          be_.sgd_update(master, param, gr, static_cast<float*>(device_state(0, l)), n, glr, h.sgd_momentum, wd,
                         grad_scale);
        else if (lion)
          be_.lion_update(master, param, gr, static_cast<float*>(device_state(0, l)), n, glr, h.lion_beta1,
                          h.lion_beta2, wd, grad_scale);
        else if (fp32_moments)
          be_.adamw_update(master, param, gr, static_cast<float*>(device_state(0, l)),
                           static_cast<float*>(device_state(1, l)), n, glr, h.beta1, h.beta2, h.eps, wd, step,
                           grad_scale);
        else
          be_.adamw_update_stored(master, param, gr,
                                  {device_state(0, l), h.exp_avg_dtype, device_state(1, l), h.exp_avg_sq_dtype}, n, glr,
                                  h.beta1, h.beta2, h.eps, wd, step, grad_scale);
      },
      true);
}

namespace {

// n values of storage dtype d to / from fp32 (widening is exact; narrowing rounds to nearest even).
void widen(float* out, const void* src, DType d, std::size_t n) {
  if (d == DType::F32) {
    std::copy_n(static_cast<const float*>(src), n, out);
    return;
  }
  const auto* h = static_cast<const uint16_t*>(src);
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(h[i]);
}

void narrow(void* dst, const float* in, DType d, std::size_t n) {
  if (d == DType::F32) {
    std::copy_n(in, n, static_cast<float*>(dst));
    return;
  }
  auto* h = static_cast<uint16_t*>(dst);
  for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(in[i]);
}

}  // namespace

void AdamW::state_to_host(int which, float* out) {
  check(which >= 0 && which <= 2, "AdamW: state array {}", which);
  check(which != 1 || v_ != nullptr, "optimizer state {}: --optimizer sgd keeps no exp_avg_sq", which);
  check(which != 2 || owns_master_, "optimizer state {}: fp32 compute keeps no separate master copy", which);
  const DType d = state_dtype(which);
  for_each_range([&](std::size_t, std::size_t l, std::size_t n, bool host) {
    if (host) {
      widen(out + l, host_state(which, l), d, n);
    } else if (d == DType::F32) {
      be_.copy_to_host(out + l, device_state(which, l), n * sizeof(float));
    } else {
      std::vector<uint16_t> h(n);
      be_.copy_to_host(h.data(), device_state(which, l), n * 2);
      widen(out + l, h.data(), d, n);
    }
  });
}

void AdamW::state_from_host(int which, const float* in) {
  check(which >= 0 && which <= 2, "AdamW: state array {}", which);
  check(which != 1 || v_ != nullptr, "optimizer state {}: --optimizer sgd keeps no exp_avg_sq", which);
  check(which != 2 || owns_master_, "optimizer state {}: fp32 compute keeps no separate master copy", which);
  const DType d = state_dtype(which);
  for_each_range([&](std::size_t, std::size_t l, std::size_t n, bool host) {
    if (host) {
      narrow(host_state(which, l), in + l, d, n);
    } else if (d == DType::F32) {
      be_.copy_to_device(device_state(which, l), in + l, n * sizeof(float));
    } else {
      std::vector<uint16_t> h(n);
      narrow(h.data(), in + l, d, n);
      be_.copy_to_device(device_state(which, l), h.data(), n * 2);
    }
  });
}

void AdamW::params_changed() {
  round_params_to_bf16();
  if (owns_master_) return;  // separate masters are set with state_from_host(2, ...)
  for_each_range([&](std::size_t a, std::size_t l, std::size_t n, bool host) {
    if (host) params_to_host_master(a, l, n);
  });
}

}  // namespace gptrain
