// Optimizer pieces: AdamW's two ranges (decay / no decay) and its parameter groups (--decoupled-lr)
// against a plain fp64 reference, which tensors form the decoupled group (Megatron's embedding and
// output layer weights), the dynamic loss scaler's Megatron rules (hysteresis, window growth, floor; and against a
// transcription of Megatron's DynamicGradScaler.update over random overflow sequences), the
// clipping coefficient.
#include "core/common/error.h"
#include "core/model/param_layout.h"
#include "core/optim/adamw.h"
#include "core/optim/grad_clip.h"
#include "core/optim/loss_scaler.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace gptrain;

TEST_CASE("optim: AdamW decays the first range only and matches an fp64 reference") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 10, nd = 6;
  std::vector<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f, g[i] = 0.05f * float(int(i) - 4);
  float* dp = static_cast<float*>(be->alloc(n * 4));
  float* dg = static_cast<float*>(be->alloc(n * 4));
  be->copy_to_device(dp, p.data(), n * 4);
  be->copy_to_device(dg, g.data(), n * 4);
  AdamW opt(*be, dp, n, nd, AdamWHyper{0.9f, 0.95f, 1e-8f});
  std::vector<double> rp(p.begin(), p.end()), m(n, 0), v(n, 0);
  const double lr = 1e-2, wd = 0.1, scale = 0.5;
  for (int step = 1; step <= 3; ++step) {
    opt.step(dg, float(lr), float(wd), float(scale));
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = double(g[i]) * scale;
      m[i] = 0.9 * m[i] + 0.1 * gi;
      v[i] = 0.95 * v[i] + 0.05 * gi * gi;
      const double mh = m[i] / (1 - std::pow(0.9, step)), vh = v[i] / (1 - std::pow(0.95, step));
      rp[i] -= lr * (mh / (std::sqrt(vh) + 1e-8) + (i < nd ? wd : 0.0) * rp[i]);
    }
  }
  REQUIRE(opt.steps() == 3);
  std::vector<float> out(n);
  be->copy_to_host(out.data(), dp, n * 4);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(out[i] == Approx(rp[i]).margin(1e-6));
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: AdamW over pieces updates only them, with state at their local offsets") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 12, nd = 5;
  std::vector<float> p(n), g(4);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f;
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.05f * float(int(i) - 2);
  float* dp = static_cast<float*>(be->alloc(n * 4));
  float* dg = static_cast<float*>(be->alloc(g.size() * 4));
  be->copy_to_device(dp, p.data(), n * 4);
  be->copy_to_device(dg, g.data(), g.size() * 4);
  // Parameters [3, 6) straddle the weight-decay cut at 5; [9, 10) has none. Local: [0, 3) and [3, 4).
  AdamW opt(*be, dp, n, decay_split_ranges(n, nd), AdamWHyper{0.9f, 0.95f, 1e-8f}, {{3, 6, 0}, {9, 10, 3}}, 4);
  REQUIRE(opt.local_size() == 4);
  opt.step(dg, 1e-2f, 0.1f, 1.0f);
  std::vector<float> out(n), m(4);
  be->copy_to_host(out.data(), dp, n * 4);
  opt.state_to_host(0, m.data());
  for (std::size_t i : {0, 1, 2, 6, 7, 8, 10, 11}) REQUIRE(out[i] == p[i]);  // outside the pieces: untouched
  const std::size_t global[4] = {3, 4, 5, 9};
  for (std::size_t l = 0; l < 4; ++l) {
    REQUIRE(m[l] == Approx(0.1f * g[l]));
    // Step 1: mhat/(sqrt(vhat)+eps) = sign(g); decay on global offsets below 5 only.
    const double wd = global[l] < nd ? 0.1 : 0.0;
    const double want = g[l] == 0.0f ? p[global[l]] * (1 - 1e-2 * wd)
                                     : p[global[l]] - 1e-2 * ((g[l] > 0 ? 1.0 : -1.0) + wd * p[global[l]]);
    REQUIRE(out[global[l]] == Approx(want).margin(1e-6));
  }
  be->release(dp);
  be->release(dg);
}

namespace {

// AdamW step 1 on one element: mhat / (sqrt(vhat) + eps) = sign(g).
double adam_first_step(double p, double g, double lr, double wd) {
  return g == 0.0 ? p * (1 - lr * wd) : p - lr * ((g > 0 ? 1.0 : -1.0) + wd * p);
}

std::vector<std::string> decoupled_names(const StageConfig& c) {
  const ParamLayout l = build_param_layout(c);
  std::vector<std::string> out;
  for (const ParamTensor& t : l.tensors)
    if (uses_decoupled_lr(t)) out.push_back(t.name);
  // Every element of a decoupled tensor lies in a decoupled range, and no other element does.
  for (const ParamGroupRange& r : param_group_ranges(l))
    for (const ParamTensor& t : l.tensors)
      if (t.offset < r.hi && r.lo < t.offset + t.numel) {
        REQUIRE(r.decoupled_lr == uses_decoupled_lr(t));
        REQUIRE(r.decay == t.decay);
      }
  return out;
}

}  // namespace

TEST_CASE("optim: the decoupled group is the input word embeddings and the output layer weight") {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.vocab_size = 40;
  StageConfig tied = c;
  tied.finalize(8);  // learned absolute positions: the position table stays in the default group
  REQUIRE(build_param_layout(tied).find("embedding.position_embeddings.weight") != nullptr);
  CHECK(decoupled_names(tied) == std::vector<std::string>{"embedding.word_embeddings.weight"});
  StageConfig untied = c;
  untied.untie_embeddings_and_output_weights = true;
  untied.output_layer_bias = true;  // the bias is not marked (Megatron marks the weight only)
  untied.finalize(8);
  CHECK(decoupled_names(untied) == std::vector<std::string>{"embedding.word_embeddings.weight", "output_layer.weight"});
  // PP > 1 with tied embeddings: the last stage's copy is its output layer weight, in the group too;
  // a middle stage has none.
  StageConfig last = c;
  last.layer_first = 1, last.layer_last = 2, last.has_embedding = false, last.has_head = true;
  last.finalize(8);
  const ParamLayout last_layout = build_param_layout(last);
  REQUIRE(last_layout.at("embedding.word_embeddings.weight").tied_copy);
  CHECK(decoupled_names(last) == std::vector<std::string>{"embedding.word_embeddings.weight"});
  StageConfig middle = c;
  middle.num_layers = 3, middle.layer_first = 1, middle.layer_last = 2, middle.has_embedding = false,
  middle.has_head = false;
  middle.finalize(8);
  CHECK(decoupled_names(middle).empty());
  // The ranges of the tied single-stage layout: word embeddings | rest of the decayed | not decayed.
  const ParamLayout l = build_param_layout(tied);
  const std::vector<ParamGroupRange> r = param_group_ranges(l);
  REQUIRE(r.size() == 3);
  CHECK((r[0].lo == 0 && r[0].decoupled_lr && r[0].decay));
  CHECK((r[1].lo == r[0].hi && !r[1].decoupled_lr && r[1].decay && r[1].hi == l.num_decay));
  CHECK((r[2].lo == l.num_decay && !r[2].decoupled_lr && !r[2].decay && r[2].hi == l.total));
}

TEST_CASE("optim: AdamW parameter groups: decoupled LR on its ranges, pieces cut at group bounds") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 12;
  // [0, 3) decoupled + decay | [3, 8) decay | [8, 10) no decay | [10, 12) decoupled + decay.
  const std::vector<ParamGroupRange> groups{
      {0, 3, true, true}, {3, 8, true, false}, {8, 10, false, false}, {10, 12, true, true}};
  std::vector<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f, g[i] = 0.05f * float(int(i) - 4);
  float* dp = static_cast<float*>(be->alloc(n * 4));
  float* dg = static_cast<float*>(be->alloc(n * 4));
  be->copy_to_device(dp, p.data(), n * 4);
  // Pieces [1, 9) and [9, 12) as two DP shards would cut them: local offsets 0 and 8, gradients there.
  be->copy_to_device(dg, g.data() + 1, (n - 1) * 4);
  AdamW opt(*be, dp, n, groups, AdamWHyper{0.9f, 0.95f, 1e-8f}, {{1, 9, 0}, {9, 12, 8}}, 11);
  const double lr = 1e-2, dlr = 3e-2, wd = 0.1;
  opt.step(dg, float(lr), float(dlr), float(wd), 1.0f);
  std::vector<float> out(n);
  be->copy_to_host(out.data(), dp, n * 4);
  CHECK(out[0] == p[0]);  // in no piece
  for (std::size_t i = 1; i < n; ++i) {
    const bool decoupled = i < 3 || i >= 10, decay = i < 8 || i >= 10;
    INFO("element " << i);
    CHECK(out[i] == Approx(adam_first_step(p[i], g[i], decoupled ? dlr : lr, decay ? wd : 0.0)).margin(1e-6));
  }
  // --decoupled-lr equal to --lr: the same bits as the plain decay split.
  be->copy_to_device(dp, p.data(), n * 4);
  be->copy_to_device(dg, g.data(), n * 4);
  AdamW grouped(*be, dp, n, groups, AdamWHyper{0.9f, 0.95f, 1e-8f}, {{0, n, 0}}, n);
  for (int step = 0; step < 3; ++step) grouped.step(dg, float(lr), float(lr), float(wd), 0.5f);
  std::vector<float> grouped_out(n);
  be->copy_to_host(grouped_out.data(), dp, n * 4);
  const std::vector<ParamGroupRange> split{{0, 8, true, false}, {8, 10, false, false}, {10, 12, true, false}};
  be->copy_to_device(dp, p.data(), n * 4);
  AdamW plain(*be, dp, n, split, AdamWHyper{0.9f, 0.95f, 1e-8f}, {{0, n, 0}}, n);
  for (int step = 0; step < 3; ++step) plain.step(dg, float(lr), float(wd), 0.5f);
  std::vector<float> plain_out(n);
  be->copy_to_host(plain_out.data(), dp, n * 4);
  CHECK(grouped_out == plain_out);
  const std::vector<ParamGroupRange> gap{{0, 3, true, false}, {4, 12, true, false}};
  CHECK_THROWS_AS(AdamW(*be, dp, n, gap, AdamWHyper{}, {{0, n, 0}}, n), Error);
  be->release(dp);
  be->release(dg);
}

TEST_CASE("optim: dynamic loss scaler (hysteresis, growth window, floor) and state round trip") {
  LossScaler s = LossScaler::dynamic(1024, 256, 3, 2);
  s.update(true);  // first overflow: uses up one hysteresis credit, scale kept
  REQUIRE(s.scale() == 1024);
  s.update(true);  // credits gone: halve
  REQUIRE(s.scale() == 512);
  s.update(true);  // still no credits: halve again
  REQUIRE(s.scale() == 256);
  s.update(true);  // floor
  REQUIRE(s.scale() == 256);
  s.update(false), s.update(false);
  REQUIRE(s.scale() == 256);
  const auto saved = s.state_json();
  s.update(false);  // third clean iteration: double, credits refilled
  REQUIRE(s.scale() == 512);
  s.update(true);
  REQUIRE(s.scale() == 512);  // hysteresis 2 again
  LossScaler r = LossScaler::dynamic(1024, 256, 3, 2);
  r.load_state_json(saved);
  r.update(false);
  REQUIRE(r.scale() == 512);
  LossScaler c = LossScaler::constant(128);
  c.update(true);
  REQUIRE(c.scale() == 128);
  REQUIRE(LossScaler::none().scale() == 1.0);
}

namespace {

// Megatron's DynamicGradScaler.update written out on its own (scale an fp32 tensor there, hence float), to
// check LossScaler against over long overflow sequences: growth 2, backoff 0.5.
struct MegatronDynamicScaler {
  float scale, min_scale;
  int growth_interval, hysteresis, growth_tracker = 0, hysteresis_tracker;
  MegatronDynamicScaler(float initial, float min, int interval, int hyst)
      : scale(initial), min_scale(min), growth_interval(interval), hysteresis(hyst), hysteresis_tracker(hyst) {}
  void update(bool found_inf) {
    if (found_inf) {
      growth_tracker = 0;
      hysteresis_tracker -= 1;
      if (hysteresis_tracker <= 0) scale = std::max(scale * 0.5f, min_scale);
    } else {
      growth_tracker += 1;
      if (growth_tracker == growth_interval) {
        growth_tracker = 0;
        hysteresis_tracker = hysteresis;
        scale = scale * 2.0f;
      }
    }
  }
};

}  // namespace

TEST_CASE("optim: dynamic loss scaler follows Megatron's DynamicGradScaler over random overflow sequences") {
  // A clean iteration between two overflows refills no hysteresis credit (only a growth does): with
  // hysteresis 2 the second overflow of overflow, clean, overflow halves the scale.
  LossScaler s = LossScaler::dynamic(65536, 1, 1000, 2);
  s.update(true), s.update(false), s.update(true);
  REQUIRE(s.scale() == 32768);
  REQUIRE(s.state_json()["hysteresis_tracker"] == 0);
  std::mt19937 rng(1234);
  int backoffs = 0, growths = 0, floors = 0;
  for (int config = 0; config < 300; ++config) {
    const int window = 1 + int(rng() % 6), hysteresis = 1 + int(rng() % 4);
    const float initial = std::ldexp(1.0f + float(rng() % 4) / 4.0f, int(rng() % 33));  // 1 .. 1.75 * 2^32
    const float min_scale = std::ldexp(initial, -int(rng() % 12));
    const double p_inf = double(rng() % 100) / 100.0;  // overflow rate of this sequence
    LossScaler got = LossScaler::dynamic(initial, min_scale, window, hysteresis);
    MegatronDynamicScaler want(initial, min_scale, window, hysteresis);
    for (int step = 0; step < 80; ++step) {
      const bool found_inf = double(rng() % 1000) / 1000.0 < p_inf;
      const double before = got.scale();
      got.update(found_inf);
      want.update(found_inf);
      INFO("config " << config << " (initial " << initial << ", min " << min_scale << ", window " << window
                     << ", hysteresis " << hysteresis << ") step " << step << " found_inf " << found_inf);
      REQUIRE(got.scale() == double(want.scale));
      const nlohmann::json st = got.state_json();
      REQUIRE(st["growth_tracker"] == want.growth_tracker);
      REQUIRE(st["hysteresis_tracker"] == want.hysteresis_tracker);
      backoffs += got.scale() < before;
      growths += got.scale() > before;
      floors += found_inf && want.hysteresis_tracker <= 0 && before == double(min_scale);
    }
  }
  // The sequences reach every branch many times: backoff, growth, and an overflow held at the floor.
  CHECK(backoffs > 100);
  CHECK(growths > 100);
  CHECK(floors > 100);
}

TEST_CASE("optim: clip coefficient as torch clip_grad_norm_") {
  REQUIRE(clip_coefficient(0.5, 1.0) == 1.0);
  REQUIRE(clip_coefficient(4.0, 1.0) == Approx(1.0 / (4.0 + 1e-6)));
  REQUIRE(clip_coefficient(100.0, 0.0) == 1.0);
}

TEST_CASE("optim: AdamW with part of its state on the host (--optimizer-cpu-offload) steps bit for bit alike") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 12, nd = 5;
  std::vector<float> p(n), g(6);
  for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 0.3f;
  // Moments fp32, or bf16 (--exp-avg-dtype / --exp-avg-sq-dtype: stored bf16 on the device and on the host)
  DType md = DType::F32, vd = DType::F32;
  auto run = [&](double host_fraction, std::size_t* host_elements) {
    float* dp = static_cast<float*>(be->alloc(n * 4));
    float* dg = static_cast<float*>(be->alloc(g.size() * 4));
    be->copy_to_device(dp, p.data(), n * 4);
    // Pieces [1, 5) at 0 and [8, 10) at 4: the host cut falls inside the first or the second.
    AdamW opt(*be, dp, n, decay_split_ranges(n, nd), AdamWHyper{0.9f, 0.95f, 1e-8f, md, vd}, {{1, 5, 0}, {8, 10, 4}}, 6,
              host_fraction);
    *host_elements = opt.host_elements();
    for (int s = 0; s < 3; ++s) {
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.05f * float(int(i) - 2) + 0.01f * float(s);
      be->copy_to_device(dg, g.data(), g.size() * 4);
      opt.step(dg, 1e-2f, 0.1f, 1.0f);
    }
    std::vector<float> out(n + 12);
    be->copy_to_host(out.data(), dp, n * 4);
    opt.state_to_host(0, out.data() + n);
    opt.state_to_host(1, out.data() + n + 6);
    be->release(dp);
    be->release(dg);
    return out;
  };
  std::size_t host = 0;
  std::vector<float> fp32_moments;
  for (const auto& [m_dtype, v_dtype] : std::vector<std::pair<DType, DType>>{
           {DType::F32, DType::F32}, {DType::BF16, DType::BF16}, {DType::F32, DType::BF16}}) {
    md = m_dtype, vd = v_dtype;
    INFO("moments " << dtype_name(md) << " / " << dtype_name(vd));
    const std::vector<float> device = run(0.0, &host);
    CHECK(host == 0);
    for (const auto& [f, expect] : std::vector<std::pair<double, std::size_t>>{{0.5, 3}, {0.75, 5}, {1.0, 6}}) {
      INFO("host fraction " << f);
      const std::vector<float> mixed = run(f, &host);
      CHECK(host == expect);  // local elements [0, host) on the host
      CHECK(std::memcmp(mixed.data(), device.data(), device.size() * 4) == 0);
    }
    if (md == DType::F32 && vd == DType::F32) {
      fp32_moments = device;
      continue;
    }
    CHECK(std::memcmp(fp32_moments.data(), device.data(), device.size() * 4) != 0);
    // Stored bf16 moments come back as bf16 values (the low 16 bits zero).
    for (std::size_t i = vd == DType::BF16 && md == DType::F32 ? n + 6 : n; i < device.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &device[i], 4);
      CHECK((u & 0xffffu) == 0);
    }
  }
}

TEST_CASE("optim: bf16-stored moments load from fp32 rounded to nearest even, and save exactly") {
  auto be = make_backend("cpu", DType::F32);
  const std::size_t n = 7;
  float* dp = static_cast<float*>(be->alloc(n * 4));
  be->fill_zero(dp, n * 4);
  for (const double host_fraction : {0.0, 0.5}) {
    AdamW opt(*be, dp, n, decay_split_ranges(n, 3), AdamWHyper{0.9f, 0.95f, 1e-8f, DType::BF16, DType::F32},
              {{0, n, 0}}, n, host_fraction);
    // 1 + 2^-8 is a tie (rounds down to 1, even), 1 + 3 * 2^-9 rounds up to 1 + 2^-7, bf16 values stay.
    const std::vector<float> in = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-9f, -2.5f, 0.0f, 1e-3f, 3.0f, 1.0f + 0x1p-7f};
    opt.state_from_host(0, in.data());
    opt.state_from_host(1, in.data());
    std::vector<float> m(n), v(n);
    opt.state_to_host(0, m.data());
    opt.state_to_host(1, v.data());
    CHECK(m[0] == 1.0f);
    CHECK(m[1] == 1.0f + 0x1p-7f);
    CHECK(m[2] == -2.5f);
    CHECK(m[4] == 0x1.06p-10f);  // 1e-3 to bf16
    CHECK(m[6] == 1.0f + 0x1p-7f);
    CHECK(std::memcmp(v.data(), in.data(), n * 4) == 0);  // fp32 second moment: exact
    opt.state_from_host(0, m.data());
    std::vector<float> again(n);
    opt.state_to_host(0, again.data());
    CHECK(std::memcmp(again.data(), m.data(), n * 4) == 0);  // a saved bf16 state reloads bit for bit
  }
  be->release(dp);
}
