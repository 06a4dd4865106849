// The FP8 linear (core/model/fp8_linear.h) through fp8_gemm equals its dequantising fallback (the one a
// backend whose fp8_gemm refuses the call runs: a GPU below sm_89, dimensions not multiples of 16) within
// fp32 rounding: forward with bias, input gradient written and accumulated, fp32 weight gradient accumulated,
// bias gradient; delayed scaling (hybrid: E5M2 gradients, non-power-of-two scales) and current scaling, the
// layer's shapes as TP 2 shards them and odd ones. The two paths differ only where the scales are applied:
// fp8_gemm scales the sum of the codes' products, the fallback each operand before the sum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <memory>
#include <vector>

#include "core/model/fp8_linear.h"
#include "core/model/fp8_scaling.h"
#include "core/model/layers.h"
#include "core/model/parallel_hooks.h"
#include "kernels/backend.h"

using namespace gptrain;

namespace {

// The CPU backend, counting its ops' calls; with `refuse` its fp8_gemm refuses every call (Backend::
// fp8_gemm_accepts), so FP8 training takes its dequantising path.
class CountingBackend : public Backend {
 public:
  explicit CountingBackend(bool refuse)
      : Backend(BackendOptions{}), inner_(make_backend("cpu", DType::F32)), refuse_(refuse) {}
  std::map<std::string, int> calls;
  const char* name() const override { return "cpu"; }
  DType compute_dtype() const override { return inner_->compute_dtype(); }
  std::optional<DeviceMemory> device_memory() const override { return inner_->device_memory(); }
  BackendScratch scratch_bytes() const override { return inner_->scratch_bytes(); }
  void* alloc(std::size_t bytes) override { return inner_->alloc(bytes); }
  void release(void* p) override { inner_->release(p); }
  void copy_to_device(void* d, const void* s, std::size_t n) override { inner_->copy_to_device(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) override { inner_->copy_to_host(d, s, n); }
  void copy(void* d, const void* s, std::size_t n) override { inner_->copy(d, s, n); }
  void fill_zero(void* p, std::size_t n) override { inner_->fill_zero(p, n); }
  void synchronize() override { inner_->synchronize(); }
  void convert(void* d, DType dt, const void* s, DType st, std::size_t n) override { inner_->convert(d, dt, s, st, n); }
  bool fp8_gemm_accepts(const void*, const void*, const void*, int, int, int) const override { return !refuse_; }
  bool fp8_gemm_limited() const override { return refuse_; }

 protected:
#define GPTRAIN_OP(ret, name, params, args, ...) \
  ret do_##name params override {                \
    ++calls[#name];                              \
    return inner_->name args;                    \
  }
#include "kernels/ops.inc"

 private:
  std::unique_ptr<Backend> inner_;
  bool refuse_;
};

std::vector<float> random(std::size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    f = scale * (float(x % 20001) / 10000.0f - 1.0f);
  }
  return v;
}

struct Result {
  std::vector<float> out, dinp, dw, db, state;
};

// One forward and backward of an FP8 linear (N, IC) -> (N, OC) on be (CPU memory), from fixed data.
Result run(Backend& be, const Fp8Config& fp8, int N, int IC, int OC, bool accumulate_dinp) {
  StageConfig c;
  c.num_layers = 1, c.layer_first = 0, c.layer_last = 1;
  c.fp8 = fp8;
  LocalSizes s{};
  s.N = N, s.C = std::max(IC, OC), s.ATT = IC, s.F = IC, s.QKV = OC, s.F1 = OC;
  const Fp8StageState::Sizes z = Fp8StageState::sizes_for(DType::F32, c, s, be.fp8_gemm_limited());
  std::vector<uint8_t> xc(z.input_codes), wc(z.weight_codes), gc(z.grad_codes), gct(z.grad_codes_t);
  std::vector<float> xq(z.input_q / 4), wq(z.weight_q / 4), gq(z.grad_q / 4);
  std::vector<float> state = fp8_initial_state(1, fp8);
  const int stride = fp8_state_stride(fp8);
  for (std::size_t e = 0; e * stride < state.size(); ++e) {  // scales that are no powers of two
    const float scale = 0.37f + 0.29f * float(e);
    state[e * stride + fp8.amax_history_len] = scale;
    state[e * stride + fp8.amax_history_len + 1] = 1.0f / scale;
  }
  state.push_back(0.0f);  // the amax scratch
  Fp8StageState f;
  f.config = &c.fp8;
  f.state = state.data();
  f.amax_scratch = &state.back();
  f.input_codes = xc.data(), f.weight_codes = wc.data(), f.grad_codes = gc.data(), f.grad_codes_t = gct.data();
  f.input_q = xq.empty() ? nullptr : xq.data();
  f.weight_q = wq.empty() ? nullptr : wq.data();
  f.grad_q = gq.empty() ? nullptr : gq.data();
  LayerContext ctx{be, no_parallel_hooks(), c, s, nullptr, &f};

  const std::vector<float> x = random(std::size_t(N) * IC, 1, 2.0f), w = random(std::size_t(OC) * IC, 2, 0.5f),
                           b = random(OC, 3, 1.0f), dy = random(std::size_t(N) * OC, 4, 1e-3f);
  Result r;
  r.out.assign(std::size_t(N) * OC, 0.0f);
  linear_forward(ctx, 0, Fp8Gemm::Fc1, true, r.out.data(), x.data(), w.data(), b.data(), N, IC, OC);
  r.dinp = random(std::size_t(N) * IC, 5, 1.0f);
  r.dw = random(std::size_t(OC) * IC, 6, 1.0f);
  r.db = random(OC, 7, 1.0f);
  linear_backward(ctx, 0, Fp8Gemm::Fc1, true, r.dinp.data(), r.dw.data(), r.db.data(), dy.data(), x.data(), w.data(), N,
                  IC, OC, accumulate_dinp);
  r.state = state;
  return r;
}

// max |a - b| relative to max |b|
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i]))), m = std::max(m, double(std::fabs(b[i])));
  return m > 0 ? d / m : d;
}

}  // namespace

TEST_CASE("fp8 linear: fp8_gemm and the dequantising fallback agree within fp32 rounding") {
  auto cpu = make_backend("cpu", DType::F32);
  Fp8Config delayed;
  delayed.enabled = true, delayed.hybrid = true, delayed.amax_history_len = 4, delayed.margin = 1;
  Fp8Config tensorwise = delayed;
  tensorwise.recipe = Fp8Recipe::Tensorwise, tensorwise.hybrid = false;
  struct Shape {
    int N, IC, OC;
  };
  // hidden 64, 4 heads: the QKV (64 -> 192 / 2) and fc2 (256 / 2 -> 64) shards of TP 2; odd sizes
  for (const Shape sh : {Shape{32, 64, 96}, Shape{32, 128, 64}, Shape{6, 10, 14}})
    for (const Fp8Config& cfg : {delayed, tensorwise})
      for (const bool acc : {false, true}) {
        INFO("N " << sh.N << " IC " << sh.IC << " OC " << sh.OC << " recipe " << fp8_recipe_name(cfg.recipe)
                  << " accumulate_dinp " << acc);
        CountingBackend native(false), fallback(true);
        const Result a = run(native, cfg, sh.N, sh.IC, sh.OC, acc);
        const Result b = run(fallback, cfg, sh.N, sh.IC, sh.OC, acc);
        // the CPU backend multiplies the codes (forward, input and weight gradients); the fallback dequantises
        CHECK(native.calls["fp8_gemm"] == 3);
        CHECK(native.calls["fp8_dequantize"] == 0);
        CHECK(fallback.calls["fp8_gemm"] == 0);
        CHECK(fallback.calls["fp8_dequantize"] == 5);
        CHECK(rel_err(a.out, b.out) < 1e-5);
        CHECK(rel_err(a.dinp, b.dinp) < 1e-5);
        CHECK(rel_err(a.dw, b.dw) < 1e-5);
        CHECK(a.db == b.db);
        CHECK(a.state == b.state);  // the same amaxes recorded, the same current scales
        // the outputs are FP8 products, not the unquantised ones: the test sees the quantisation
        std::vector<float> plain(a.out.size());
        const std::vector<float> x = random(std::size_t(sh.N) * sh.IC, 1, 2.0f),
                                 w = random(std::size_t(sh.OC) * sh.IC, 2, 0.5f), bias = random(sh.OC, 3, 1.0f);
        cpu->matmul_forward(plain.data(), x.data(), w.data(), bias.data(), sh.N, sh.IC, sh.OC);
        CHECK(rel_err(a.out, plain) > 1e-4);
      }
}
