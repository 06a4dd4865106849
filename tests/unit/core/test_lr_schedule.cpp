// LR / weight-decay schedule: hand-checked values at the boundaries of every style, flag validation,
// checkpoint state and Megatron's resume rule. The comparison with the independent Python reference over
// many points is the hidden test "[.lr_reference]" below, run by tests/integration/sched_lr_reference.sh.
#include "core/common/error.h"
#include "core/schedule/lr_schedule.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace gptrain::schedule;
using Catch::Matchers::Contains;

namespace {

// The schedule flags and the run's length in one object, as the tests set them.
struct Args : LrScheduleArgs, gptrain::TrainingArgs {};
LrSchedule resolve_lr_schedule(const Args& a) { return gptrain::schedule::resolve_lr_schedule(a, a); }

// 100 iterations of 8 samples, 10 warmup iterations: warmup = 80 samples, decay horizon = 800 samples.
Args base_args(const std::string& style) {
  Args a;
  a.train_iters = 100;
  a.global_batch_size = 8;
  a.lr = 1e-3;
  a.min_lr = 1e-4;
  a.lr_warmup_iters = 10;
  a.lr_decay_style = style;
  return a;
}

double lr_of(const Args& a, int64_t samples) { return lr_at(resolve_lr_schedule(a), samples); }

}  // namespace

TEST_CASE("lr schedule: iteration flags become samples", "[lr]") {
  Args a = base_args("cosine");
  a.lr_decay_iters = 90;
  const LrSchedule s = resolve_lr_schedule(a);
  CHECK(s.warmup_steps == 80.0);
  CHECK(s.decay_steps == 720);
  CHECK(s.wd_incr_steps == 800);  // train_iters · gbs, not the decay horizon
  a.lr_warmup_iters = 0;
  a.lr_warmup_fraction = 0.25;
  CHECK(resolve_lr_schedule(a).warmup_steps == 180.0);  // fraction of the decay horizon

  Args b;
  b.train_samples = 800;
  b.global_batch_size = 8;
  b.lr = 1e-3;
  b.lr_warmup_samples = 80;
  b.lr_decay_style = "WSD";
  b.lr_wsd_decay_samples = 160;
  const LrSchedule t = resolve_lr_schedule(b);
  CHECK(t.warmup_steps == 80.0);
  CHECK(t.decay_steps == 800);
  CHECK(t.wd_incr_steps == 800);
  CHECK(t.wsd_decay_steps == 160);
}

TEST_CASE("lr schedule: linear warmup from lr_warmup_init", "[lr]") {
  Args a = base_args("linear");
  CHECK(lr_of(a, 0) == 0.0);
  CHECK(lr_of(a, 40) == Approx(5e-4).epsilon(1e-15));
  CHECK(lr_of(a, 80) == 1e-3);  // the last warmup step reaches the peak exactly
  a.lr_warmup_init = 1e-4;
  CHECK(lr_of(a, 0) == 1e-4);
  CHECK(lr_of(a, 40) == Approx(5.5e-4).epsilon(1e-15));
  a.lr_warmup_iters = 0;  // no warmup: step 0 is already the peak
  CHECK(lr_of(a, 0) == 1e-3);
}

TEST_CASE("lr schedule: linear, cosine, constant decay", "[lr]") {
  const Args lin = base_args("linear");
  CHECK(lr_of(lin, 440) == Approx(5.5e-4).epsilon(1e-14));  // half way through decay
  CHECK(lr_of(lin, 800) == Approx(1e-4).epsilon(1e-14));    // end of the horizon
  CHECK(lr_of(lin, 808) == 1e-4);                           // past it: min_lr exactly

  const Args cos = base_args("cosine");
  CHECK(lr_of(cos, 81) < 1e-3);
  CHECK(lr_of(cos, 320) == Approx(1e-4 + 0.75 * 9e-4).epsilon(1e-14));  // ratio 1/3: cos(pi/3) = 1/2
  CHECK(lr_of(cos, 440) == Approx(5.5e-4).epsilon(1e-14));
  CHECK(lr_of(cos, 800) == Approx(1e-4).epsilon(1e-14));
  CHECK(lr_of(cos, 10000) == 1e-4);

  const Args con = base_args("constant");
  CHECK(lr_of(con, 40) == Approx(5e-4).epsilon(1e-15));  // warmup still applies
  CHECK(lr_of(con, 440) == 1e-3);
  CHECK(lr_of(con, 10000) == 1e-3);  // constant ignores the decay horizon and min_lr
}

TEST_CASE("lr schedule: inverse-square-root", "[lr]") {
  Args a = base_args("inverse-square-root");
  CHECK(lr_of(a, 80) == 1e-3);
  CHECK(lr_of(a, 320) == Approx(5e-4).epsilon(1e-14));      // sqrt(80/320) = 1/2
  CHECK(lr_of(a, 720) == Approx(1e-3 / 3).epsilon(1e-14));  // sqrt(80/720) = 1/3
  CHECK(lr_of(a, 801) == 1e-4);
  a.min_lr = 4e-4;
  CHECK(lr_of(a, 720) == 4e-4);  // floored at min_lr
  a.lr_warmup_iters = 0;
  CHECK(lr_of(a, 0) == 1e-3);  // warmup and step are clamped to 1
  CHECK(lr_of(a, 4) == Approx(5e-4).epsilon(1e-14));
}

TEST_CASE("lr schedule: WSD anneal styles", "[lr]") {
  Args a = base_args("WSD");
  a.lr_wsd_decay_iters = 20;  // anneal over the last 160 of 800 samples, from sample 640
  for (const char* style : {"exponential", "linear", "cosine", "minus_sqrt"}) {
    a.lr_wsd_decay_style = style;
    INFO(style);
    CHECK(lr_of(a, 40) == Approx(5e-4).epsilon(1e-15));
    CHECK(lr_of(a, 600) == 1e-3);
    CHECK(lr_of(a, 640) == 1e-3);
    CHECK(lr_of(a, 641) < 1e-3);
    CHECK(lr_of(a, 800) == Approx(1e-4).epsilon(1e-14));
    CHECK(lr_of(a, 801) == 1e-4);
  }
  a.lr_wsd_decay_style = "exponential";
  CHECK(lr_of(a, 720) == Approx(1e-4 + (2 * std::sqrt(0.5) - 1) * 9e-4).epsilon(1e-14));
  a.lr_wsd_decay_style = "linear";
  CHECK(lr_of(a, 720) == Approx(5.5e-4).epsilon(1e-14));
  a.lr_wsd_decay_style = "cosine";
  CHECK(lr_of(a, 680) == Approx(1e-4 + 0.5 * (std::cos(M_PI / 4) + 1) * 9e-4).epsilon(1e-14));
  a.lr_wsd_decay_style = "minus_sqrt";
  CHECK(lr_of(a, 720) == Approx(1e-4 + (1 - std::sqrt(0.5)) * 9e-4).epsilon(1e-14));
}

TEST_CASE("lr schedule: weight-decay increment styles", "[lr]") {
  Args a = base_args("linear");
  a.weight_decay = 0.1;
  CHECK(weight_decay_at(resolve_lr_schedule(a), 0) == 0.1);
  CHECK(weight_decay_at(resolve_lr_schedule(a), 5000) == 0.1);
  a.weight_decay_incr_style = "linear";
  a.start_weight_decay = 0.0;
  a.end_weight_decay = 0.1;
  LrSchedule s = resolve_lr_schedule(a);
  CHECK(weight_decay_at(s, 0) == 0.0);
  CHECK(weight_decay_at(s, 200) == Approx(0.025).epsilon(1e-15));
  CHECK(weight_decay_at(s, 400) == Approx(0.05).epsilon(1e-15));
  CHECK(weight_decay_at(s, 800) == Approx(0.1).epsilon(1e-15));
  CHECK(weight_decay_at(s, 900) == 0.1);
  a.weight_decay_incr_style = "cosine";
  s = resolve_lr_schedule(a);
  CHECK(weight_decay_at(s, 0) == Approx(0.0).margin(1e-17));
  CHECK(weight_decay_at(s, 200) == Approx(0.1 * 0.5 * (1 - std::sqrt(0.5))).epsilon(1e-14));
  CHECK(weight_decay_at(s, 400) == Approx(0.05).epsilon(1e-14));
  CHECK(weight_decay_at(s, 800) == Approx(0.1).epsilon(1e-15));
}

TEST_CASE("lr schedule: scheduler steps in samples", "[lr]") {
  const Args args = base_args("linear");
  LrScheduler sched(args, args);
  CHECK(sched.lr() == 0.0);
  CHECK(sched.weight_decay() == 0.01);  // Megatron's default --weight-decay
  for (int i = 0; i < 5; ++i) sched.step(8);
  CHECK(sched.num_steps() == 40);
  CHECK(sched.lr() == Approx(5e-4).epsilon(1e-15));
  CHECK_THROWS_AS(sched.step(-1), gptrain::Error);
}

TEST_CASE("lr schedule: inconsistent flags are rejected with a reason", "[lr]") {
  auto rejects = [](Args a, const std::string& needle) { CHECK_THROWS_WITH(resolve_lr_schedule(a), Contains(needle)); };
  Args a = base_args("linear");
  a.lr.reset();
  rejects(a, "--lr is required");
  a = base_args("linear");
  a.train_samples = 100;
  rejects(a, "exactly one of --train-iters and --train-samples");
  a = base_args("linear");
  a.lr_decay_style = "polynomial";
  rejects(a, "is not one of constant|linear|cosine|inverse-square-root|WSD");
  a = base_args("WSD");
  rejects(a, "needs --lr-wsd-decay-iters");
  a = base_args("cosine");
  a.lr_wsd_decay_iters = 10;
  rejects(a, "only apply with --lr-decay-style WSD");
  a = base_args("WSD");
  a.lr_wsd_decay_iters = 10;
  a.lr_wsd_decay_style = "step";
  rejects(a, "--lr-wsd-decay-style");
  a = base_args("linear");
  a.lr_warmup_iters = 100;
  rejects(a, "must be shorter than the decay horizon");
  a = base_args("linear");
  a.lr_warmup_fraction = 0.1;
  rejects(a, "--lr-warmup-fraction cannot be combined");
  a = base_args("linear");
  a.lr_warmup_samples = 10;
  rejects(a, "--lr-warmup-samples needs --train-samples");
  a = base_args("linear");
  a.min_lr = 2e-3;
  rejects(a, "must be >= --min-lr");
  a = base_args("linear");
  a.lr_warmup_init = 2e-3;
  rejects(a, "--lr-warmup-init");
  a = base_args("linear");
  a.start_weight_decay = 0.0;
  rejects(a, "need --weight-decay-incr-style linear or cosine");
  a = base_args("linear");
  a.weight_decay_incr_style = "linear";
  rejects(a, "needs both --start-weight-decay and --end-weight-decay");
  a = base_args("linear");
  a.override_opt_param_scheduler = a.use_checkpoint_opt_param_scheduler = true;
  rejects(a, "mutually exclusive");
  a = base_args("linear");
  a.train_iters = 0;
  rejects(a, "decay horizon is 0 samples");
}

TEST_CASE("lr schedule: state json round trip and the resume rule", "[lr]") {
  Args a = base_args("WSD");
  a.lr_wsd_decay_iters = 20;
  LrScheduler saved(a, a);
  for (int i = 0; i < 37; ++i) saved.step(8);
  const nlohmann::json state = nlohmann::json::parse(saved.state_json().dump());  // through text, as on disk
  CHECK(state["num_steps"] == 296);
  CHECK(state["lr_decay_style"] == "WSD");
  CHECK(state["max_lr"] == 1e-3);

  LrScheduler resumed(a, a);
  resumed.load_state_json(state);
  CHECK(resumed.num_steps() == 296);
  CHECK(resumed.lr() == saved.lr());
  const double lr_at_296 = saved.lr();
  for (int i = 0; i < 60; ++i) {
    saved.step(8);
    resumed.step(8);
    CHECK(resumed.lr() == saved.lr());
  }

  // A changed flag is an error that names it and both ways out.
  Args changed = a;
  changed.lr = 2e-3;
  LrScheduler strict(changed, changed);
  CHECK_THROWS_WITH(strict.load_state_json(state), Contains("--lr") && Contains("--override-opt-param-scheduler"));
  // --override-opt-param-scheduler: the flags win, only the step count comes from the checkpoint.
  changed.override_opt_param_scheduler = true;
  LrScheduler overriding(changed, changed);
  overriding.load_state_json(state);
  CHECK(overriding.schedule().max_lr == 2e-3);
  CHECK(overriding.num_steps() == 296);
  // --use-checkpoint-opt-param-scheduler: the checkpoint wins.
  changed.override_opt_param_scheduler = false;
  changed.use_checkpoint_opt_param_scheduler = true;
  changed.lr_decay_style = "cosine";
  changed.lr_wsd_decay_iters.reset();
  LrScheduler from_ckpt(changed, changed);
  from_ckpt.load_state_json(state);
  CHECK(from_ckpt.schedule().max_lr == 1e-3);
  CHECK(from_ckpt.schedule().decay_style == LrDecayStyle::wsd);
  CHECK(from_ckpt.schedule().wsd_decay_steps == 160);
  CHECK(from_ckpt.lr() == lr_at_296);

  nlohmann::json broken = state;
  broken.erase("min_lr");
  LrScheduler fresh(a, a);
  CHECK_THROWS_WITH(fresh.load_state_json(broken), Contains("missing key 'min_lr'"));
  broken = state;
  broken["num_steps"] = "many";
  CHECK_THROWS_WITH(fresh.load_state_json(broken), Contains("'num_steps' has the wrong type"));
}

TEST_CASE("lr schedule: the decoupled group has its own peak and floor on the same shape", "[lr]") {
  Args a = base_args("linear");  // warmup 80 samples, horizon 800, 1e-3 -> 1e-4
  a.lr_warmup_init = 2e-5;
  a.decoupled_lr = 4e-3;
  LrScheduler s(a, a);
  REQUIRE(s.has_decoupled_lr());
  CHECK(s.schedule().decoupled_min_lr == 1e-4);  // --min-lr by default
  CHECK(s.decoupled_lr() == 2e-5);               // warmup starts from --lr-warmup-init for both groups
  s.step(40);
  CHECK(s.decoupled_lr() == Approx(2e-5 + (4e-3 - 2e-5) * 0.5).epsilon(1e-15));
  CHECK(s.lr() == Approx(2e-5 + (1e-3 - 2e-5) * 0.5).epsilon(1e-15));
  s.step(40);
  CHECK(s.decoupled_lr() == 4e-3);
  s.step(360);  // halfway through the decay
  CHECK(s.decoupled_lr() == Approx(1e-4 + 0.5 * (4e-3 - 1e-4)).epsilon(1e-15));
  s.step(1000);
  CHECK(s.decoupled_lr() == 1e-4);
  a.decoupled_min_lr = 3e-6;
  CHECK(decoupled_lr_at(resolve_lr_schedule(a), 2000) == 3e-6);
  // Without --decoupled-lr the "decoupled" LR is the default one, and --decoupled-min-lr alone is inert.
  Args plain = base_args("cosine");
  plain.decoupled_min_lr = 1e-6;
  const LrSchedule p = resolve_lr_schedule(plain);
  CHECK_FALSE(p.decoupled_max_lr.has_value());
  for (int64_t n : {0, 40, 80, 300, 799, 800, 900}) CHECK(decoupled_lr_at(p, n) == lr_at(p, n));
  Args bad = base_args("linear");
  bad.decoupled_lr = -1.0;
  CHECK_THROWS_WITH(resolve_lr_schedule(bad), Contains("--decoupled-lr must be >= 0"));
  bad.decoupled_lr = 1e-3;
  bad.decoupled_min_lr = -1e-6;
  CHECK_THROWS_WITH(resolve_lr_schedule(bad), Contains("--decoupled-min-lr must be >= 0"));
}

TEST_CASE("lr schedule: the decoupled group resumes from its checkpoint state", "[lr]") {
  Args a = base_args("cosine");
  a.decoupled_lr = 5e-3;
  a.decoupled_min_lr = 5e-5;
  LrScheduler saved(a, a);
  for (int i = 0; i < 23; ++i) saved.step(8);
  const nlohmann::json state = nlohmann::json::parse(saved.state_json().dump());
  CHECK(state["decoupled_lr"] == 5e-3);
  CHECK(state["decoupled_min_lr"] == 5e-5);
  LrScheduler resumed(a, a);
  resumed.load_state_json(state);
  for (int i = 0; i < 90; ++i) {
    CHECK(resumed.decoupled_lr() == saved.decoupled_lr());
    saved.step(8);
    resumed.step(8);
  }
  // A different --decoupled-lr is refused like any changed schedule value; the two flags resolve it.
  Args changed = a;
  changed.decoupled_lr = 1e-3;
  LrScheduler strict(changed, changed);
  CHECK_THROWS_WITH(strict.load_state_json(state),
                    Contains("--decoupled-lr") && Contains("--use-checkpoint-opt-param-scheduler"));
  changed.use_checkpoint_opt_param_scheduler = true;
  LrScheduler from_ckpt(changed, changed);
  from_ckpt.load_state_json(state);
  CHECK(from_ckpt.schedule().decoupled_max_lr == 5e-3);
  // Turning it on at resume time against a checkpoint saved without it is a change too ("none").
  Args off = a;
  off.decoupled_lr.reset();
  off.decoupled_min_lr.reset();
  LrScheduler without(off, off);
  for (int i = 0; i < 5; ++i) without.step(8);
  const nlohmann::json off_state = nlohmann::json::parse(without.state_json().dump());
  CHECK(off_state["decoupled_lr"].is_null());
  LrScheduler turned_on(a, a);
  CHECK_THROWS_WITH(turned_on.load_state_json(off_state), Contains("none"));
  // A checkpoint written before the decoupled keys existed loads, and the flags stand.
  nlohmann::json old_state = off_state;
  old_state.erase("decoupled_lr");
  old_state.erase("decoupled_min_lr");
  LrScheduler from_old(a, a);
  from_old.load_state_json(old_state);
  CHECK(from_old.num_steps() == 40);
  CHECK(from_old.decoupled_lr() == decoupled_lr_at(resolve_lr_schedule(a), 40));
  CHECK(from_old.decoupled_lr() != from_old.lr());
}

// Hidden: run by tests/integration/sched_lr_reference.sh with GPTRAIN_LR_REFERENCE pointing at the JSON that
// tests/python/lr_schedule_ref.py wrote: for each case, the flags, whether Megatron rejects them, and
// (lr, wd) at many sample counts.
TEST_CASE("lr schedule: matches the Python reference", "[.lr_reference]") {
  const char* path = std::getenv("GPTRAIN_LR_REFERENCE");
  REQUIRE(path != nullptr);
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json ref = nlohmann::json::parse(in);
  int points = 0, exact = 0, cases = 0;
  for (const auto& c : ref.at("cases")) {
    const auto& f = c.at("flags");
    Args a;
    auto opt_i = [&](const char* k, std::optional<int64_t>& dst) {
      if (f.contains(k) && !f[k].is_null()) dst = f[k].get<int64_t>();
    };
    auto opt_d = [&](const char* k, std::optional<double>& dst) {
      if (f.contains(k) && !f[k].is_null()) dst = f[k].get<double>();
    };
    opt_i("train_iters", a.train_iters);
    opt_i("train_samples", a.train_samples);
    a.global_batch_size = f.at("global_batch_size").get<int64_t>();
    opt_d("lr", a.lr);
    a.min_lr = f.value("min_lr", 0.0);
    a.lr_decay_style = f.value("lr_decay_style", std::string("linear"));
    opt_i("lr_decay_iters", a.lr_decay_iters);
    opt_i("lr_decay_samples", a.lr_decay_samples);
    a.lr_warmup_iters = f.value("lr_warmup_iters", int64_t{0});
    a.lr_warmup_samples = f.value("lr_warmup_samples", int64_t{0});
    opt_d("lr_warmup_fraction", a.lr_warmup_fraction);
    a.lr_warmup_init = f.value("lr_warmup_init", 0.0);
    a.lr_wsd_decay_style = f.value("lr_wsd_decay_style", std::string("exponential"));
    opt_i("lr_wsd_decay_iters", a.lr_wsd_decay_iters);
    opt_i("lr_wsd_decay_samples", a.lr_wsd_decay_samples);
    a.weight_decay = f.value("weight_decay", 0.01);
    opt_d("start_weight_decay", a.start_weight_decay);
    opt_d("end_weight_decay", a.end_weight_decay);
    a.weight_decay_incr_style = f.value("weight_decay_incr_style", std::string("constant"));
    opt_d("decoupled_lr", a.decoupled_lr);
    opt_d("decoupled_min_lr", a.decoupled_min_lr);
    INFO("case " << c.at("name").get<std::string>());
    ++cases;
    if (c.at("rejected").get<bool>()) {
      CHECK_THROWS_AS(resolve_lr_schedule(a), gptrain::Error);
      continue;
    }
    LrScheduler sched(a, a);
    int64_t at = 0;
    for (const auto& p : c.at("points")) {
      const int64_t n = p.at(0).get<int64_t>();
      REQUIRE(n >= at);
      sched.step(n - at);
      at = n;
      const double want_lr = p.at(1).get<double>(), want_wd = p.at(2).get<double>();
      INFO("samples " << n);
      CHECK(sched.lr() == Approx(want_lr).epsilon(1e-13).margin(1e-300));
      CHECK(sched.weight_decay() == Approx(want_wd).epsilon(1e-13).margin(1e-300));
      const double want_decoupled = p.at(3).get<double>();
      CHECK(sched.decoupled_lr() == Approx(want_decoupled).epsilon(1e-13).margin(1e-300));
      ++points;
      if (sched.lr() == want_lr && sched.weight_decay() == want_wd && sched.decoupled_lr() == want_decoupled) ++exact;
    }
  }
  WARN("compared " << cases << " cases, " << points << " points; bitwise equal: " << exact);
  CHECK(points >= 300);
}
