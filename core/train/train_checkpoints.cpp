#include "core/train/train_checkpoints.h"

#include "core/checkpoint/retention.h"
#include "core/common/agreed_error.h"
#include "core/common/clock.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/common/profile_range.h"
#include "core/metrics/progress_log.h"
#include "core/train/checkpoint_dirs.h"
#include "core/train/exit_signal.h"
#include "core/train/setup.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

namespace gptrain {

namespace {

using Clock = std::chrono::steady_clock;

struct Opened {
  std::optional<checkpoint::Checkpoint> ck;
  std::optional<std::string> damage;  // agreed by every rank
};

// A save directory's earlier checkpoints, as the fallback candidates (newest first).
struct Candidate {
  std::string dir;
  checkpoint::Step step;
};

}  // namespace

struct TrainCheckpoints::Pending {
  Kind kind;
  int64_t iteration;
  std::string dir;
  Clock::time_point started;
  // SIGTERM/SIGINT wait until the files are committed, as for a synchronous save.
  exit_signal::SaveSection section;
};

TrainCheckpoints::TrainCheckpoints(const CheckpointArgs& args, ModelRunner& runner, const TrainerPlacement& place)
    : args_(args), runner_(runner), place_(place) {}

TrainCheckpoints::~TrainCheckpoints() = default;

std::string TrainCheckpoints::dir_of(Kind kind) const {
  return kind == Kind::persistent ? *args_.save : non_persistent_dir(args_, *args_.save);
}

std::optional<checkpoint::Checkpoint> TrainCheckpoints::open_for_load() {
  const std::optional<CheckpointChoice> choice = checkpoint_choice(args_);
  if (!choice) return std::nullopt;
  const bool load_optim = !args_.finetune && !args_.no_load_optim;
  // Every rank opens the same directory and checks its share of the files; all act on one verdict.
  auto open_verified = [&](const std::string& dir, checkpoint::Step step) {
    Opened o;
    std::optional<std::string> err;
    try {
      o.ck = checkpoint::Checkpoint::open(dir, step);
      err = o.ck->verify(place_.rank, place_.world_size);
      // A deleted optimizer file is damage as a flipped bit is (when the run reads the optimizer state).
      if (!err && load_optim) err = o.ck->missing_optimizer_files();
    } catch (const std::exception& e) {
      err = e.what();
    }
    o.damage = runner_.agree_on_error(err);
    return o;
  };
  resumed_from_save_ = !args_.finetune && args_.save && same_directory(*args_.load, *args_.save);
  Opened first = open_verified(choice->dir, choice->step);
  if (!first.damage) return std::move(first.ck);

  // The newest earlier checkpoint (of --load and of the non-persistent directory) that passes.
  std::vector<Candidate> earlier;
  if (!choice->step.release) {
    std::vector<std::string> dirs{*args_.load};
    if (args_.non_persistent_ckpt_type) dirs.push_back(non_persistent_dir(args_, *args_.load));
    for (const std::string& d : dirs)
      if (std::filesystem::is_directory(d))
        for (const int64_t n : checkpoint::saved_iterations(d))
          if (n < choice->step.iteration) earlier.push_back({d, checkpoint::Step::at(n)});
    std::stable_sort(earlier.begin(), earlier.end(),
                     [](const Candidate& a, const Candidate& b) { return a.step.iteration > b.step.iteration; });
  }
  const std::string damaged = (std::filesystem::path(choice->dir) / choice->step.dir_name()).string();
  for (const Candidate& c : earlier) {
    Opened o = open_verified(c.dir, c.step);
    const std::string path = (std::filesystem::path(c.dir) / c.step.dir_name()).string();
    if (o.damage) {
      if (place_.logs) log::warn("{} does not pass its checks either: {}", path, *o.damage);
      continue;
    }
    if (args_.ckpt_fallback_to_intact) {
      if (place_.logs)
        log::warn(
            "{} is damaged ({}); loading {} instead, the newest earlier checkpoint that passes its checksums "
            "(--ckpt-fallback-to-intact)",
            damaged, *first.damage, path);
      return std::move(o.ck);
    }
    const bool same_dir = c.dir == *args_.load;
    fail_agreed(
        "--load: {} is damaged: {}. The newest earlier checkpoint that passes its checksums is {} (iteration {}): "
        "resume from it with {}--ckpt-fallback-to-intact",
        damaged, *first.damage, path, c.step.iteration,
        same_dir ? fmt::format("--ckpt-step {} or ", c.step.iteration) : std::string());
  }
  fail_agreed("--load: {} is damaged: {}. No earlier checkpoint there passes its checksums{}", damaged, *first.damage,
              earlier.empty() ? " (there is none)" : "");
}

void TrainCheckpoints::committed(Kind kind, int64_t iteration, const std::string& dir, double seconds, bool async) {
  if (place_.logs)
    log::info("saved {}checkpoint at iteration {:7d} to {} ({:.2f} s{})",
              kind == Kind::non_persistent ? "non-persistent " : "", iteration, dir, seconds,
              async ? ", written in the background" : "");
  if (place_.rank != 0) return;  // committed on every rank; one deletes
  const bool progress = log_progress_ && kind == Kind::persistent && args_.save;
  if (progress && async)
    metrics::append_progress(*args_.save, place_.world_size,
                             fmt::format("Saved async checkpoint\tIteration: {}", iteration));
  if (kind == Kind::persistent && args_.save_retain_interval) {
    for (const int64_t n : checkpoint::delete_unretained(dir, iteration, *args_.save_retain_interval)) {
      log::info("deleted checkpoint iteration {} (--save-retain-interval)", n);
      if (progress)
        metrics::append_progress(*args_.save, place_.world_size, fmt::format("Deleted checkpoint\tIteration: {}", n));
    }
  }
  if (kind == Kind::non_persistent) checkpoint::delete_older(dir, iteration);
}

void TrainCheckpoints::check_not_replacing(const std::string& dir, checkpoint::Step step) {
  std::optional<std::string> err;
  if (place_.rank == 0 && !resumed_from_save_ && !saved_.count(step.iteration)) {
    const std::filesystem::path there = std::filesystem::path(dir) / step.dir_name();
    std::error_code ec;
    if (std::filesystem::exists(there / "metadata.json", ec))
      err = fmt::format(
          "--save {}: {} there is a committed checkpoint of another run (this run did not resume from that "
          "directory{}); refusing to replace it: resume from it with --load {}, or give --save another directory",
          dir, step.dir_name(), args_.finetune ? ": it fine-tunes, counting from iteration 0" : "", dir);
  }
  if (const std::optional<std::string> e = runner_.agree_on_error(err)) fail_agreed("{}", *e);
}

void TrainCheckpoints::save(Kind kind, const checkpoint::Metadata& meta, const std::function<void()>& before_write) {
  ProfileRange range("save-checkpoint");
  finish();  // one save at a time
  const auto t0 = Clock::now();
  const std::string dir = dir_of(kind);
  const checkpoint::Step step = checkpoint::Step::at(meta.iteration);
  if (kind == Kind::persistent) {
    check_not_replacing(dir, step);
    last_persistent_ = meta.iteration;
    saved_.insert(meta.iteration);
  }
  if (!args_.async_save) {
    const exit_signal::SaveSection whole_save;  // SIGTERM/SIGINT wait for the checkpoint to be complete
    if (before_write) before_write();
    runner_.save(dir, step, meta, !args_.no_save_optim);
    committed(kind, meta.iteration, dir, seconds_since(t0), false);
    return;
  }
  std::unique_ptr<Pending> p(new Pending{kind, meta.iteration, dir, t0, {}});
  if (before_write) before_write();
  runner_.start_async_save(dir, step, meta, !args_.no_save_optim);
  pending_ = std::move(p);
  if (place_.logs)
    log::info("started an async save of iteration {:7d} to {} (host copy {:.2f} s; training goes on)", meta.iteration,
              dir, seconds_since(t0));
}

void TrainCheckpoints::poll() {
  if (!pending_) return;
  if (!runner_.finish_async_save(false)) return;
  const std::unique_ptr<Pending> p = std::move(pending_);
  committed(p->kind, p->iteration, p->dir, seconds_since(p->started), true);
}

void TrainCheckpoints::finish() {
  if (!pending_) return;
  runner_.finish_async_save(true);
  const std::unique_ptr<Pending> p = std::move(pending_);
  committed(p->kind, p->iteration, p->dir, seconds_since(p->started), true);
}

}  // namespace gptrain
