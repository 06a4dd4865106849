// The training loop's checkpoints: which one --load resumes from (checksums verified by all ranks together,
// with the fallback to an earlier intact one), and saves: persistent (--save-interval, exits) or
// non-persistent (--non-persistent-save-interval), written synchronously or, with --async-save, in the
// background and committed by poll() once every rank has written its files. Retention
// (--save-retain-interval; the non-persistent directory keeps its latest) follows each commit.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/config/checkpoint_args.h"
#include "core/train/model_runner.h"
#include "core/train/trainer.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace gptrain {

class TrainCheckpoints {
 public:
  enum class Kind { persistent, non_persistent };

  TrainCheckpoints(const CheckpointArgs& args, ModelRunner& runner, const TrainerPlacement& place);
  ~TrainCheckpoints();

  // Collective. The checkpoint to resume from, every tensor's checksum verified (each rank reads 1/world of
  // the files); nullopt: start from random initialization. A damaged one is an Error naming the tensor and the
  // newest earlier checkpoint that passes, or (--ckpt-fallback-to-intact) that earlier one, with a warning.
  std::optional<checkpoint::Checkpoint> open_for_load();

  // Collective. Saves iteration meta.iteration; with --async-save only starts it (a save still pending is
  // committed first). `before_write` runs inside the signal-safe section, before any file is written.
  void save(Kind kind, const checkpoint::Metadata& meta, const std::function<void()>& before_write = {});
  // Collective (every iteration): commits a pending async save whose files every rank has written.
  void poll();
  // Collective: waits for a pending async save and commits it (before exiting).
  void finish();

  // The iteration of the latest persistent save started (or loaded), -1 for none: the loop does not save
  // the same iteration twice.
  int64_t last_persistent() const { return last_persistent_; }
  void set_last_persistent(int64_t it) { last_persistent_ = it; }
  // --log-progress: global rank 0 appends the commits of async saves and the deletions of
  // --save-retain-interval to <save>/progress.txt.
  void set_log_progress(bool on) { log_progress_ = on; }

 private:
  struct Pending;
  // Collective: an agreed Error when a persistent save of `step` would replace a committed checkpoint in `dir`
  // that this run neither wrote nor resumed from (a run that resumed from --save may replace its later steps,
  // as Megatron's --ckpt-step does).
  void check_not_replacing(const std::string& dir, checkpoint::Step step);
  void committed(Kind kind, int64_t iteration, const std::string& dir, double seconds, bool async);
  std::string dir_of(Kind kind) const;

  const CheckpointArgs& args_;
  ModelRunner& runner_;
  TrainerPlacement place_;
  int64_t last_persistent_ = -1;
  bool log_progress_ = false;
  bool resumed_from_save_ = false;  // loaded a checkpoint of --save itself (not --finetune)
  std::set<int64_t> saved_;         // persistent iterations this run saved
  std::unique_ptr<Pending> pending_;
};

}  // namespace gptrain
