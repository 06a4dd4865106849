#include "core/train/checkpoint_dirs.h"

#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"
#include "core/train/exit_signal.h"
#include "core/train/setup.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

namespace gptrain {

namespace fs = std::filesystem;

namespace {

// The directory a flag names, symbolic links and "..", "." and a trailing "/" resolved as far as it exists.
fs::path resolved(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) p = fs::absolute(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

// The entry of `outer` that `inner` is or lies in: "" when they are the same directory, nullopt when `inner` is
// not inside `outer`.
std::optional<std::string> entry_within(const fs::path& outer, const fs::path& inner) {
  const auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  if (o != outer.end()) return std::nullopt;
  return i == inner.end() ? std::string() : i->string();
}

// A name that a save directory's own entries have: a checkpoint, its temporaries, the tracker, the lock.
bool checkpoint_entry(const std::string& name) {
  static const std::regex names(
      R"(iter_\d{7,}|release|\.(iter_\d{7,}|release)\.(tmp|old|deleting)|latest_checkpointed_iteration\.txt.*)");
  return std::regex_match(name, names) || name == checkpoint::kSaveLockName;
}

struct Named {
  std::string flag, dir;
};

// Fails when `a` and `b` are one directory, or one lies in the other under a checkpoint's name; `harm` says what
// saving into `a` would do there.
void check_apart(const Named& a, const Named& b, const std::string& harm) {
  const fs::path pa = resolved(a.dir), pb = resolved(b.dir);
  const std::string fix = fmt::format("give {} a directory of its own", a.flag);
  if (const auto in = entry_within(pb, pa)) {
    if (in->empty())
      fail("{} {} is the {} directory{}: {}; {}", a.flag, a.dir, b.flag,
           a.dir == b.dir ? std::string() : fmt::format(" {}", b.dir), harm, fix);
    if (checkpoint_entry(*in))
      fail("{} {} lies inside the {} directory {} as {}, a name of its checkpoints: {}; {}", a.flag, a.dir, b.flag,
           b.dir, *in, harm, fix);
  }
  if (const auto in = entry_within(pa, pb); in && !in->empty() && checkpoint_entry(*in))
    fail("{} {} lies inside the {} directory {} as {}, a name of its checkpoints: {}; {}", b.flag, b.dir, a.flag, a.dir,
         *in, harm, fix);
}

}  // namespace

bool same_directory(const std::string& a, const std::string& b) { return resolved(a) == resolved(b); }

void check_checkpoint_dirs(const CheckpointArgs& a) {
  if (!a.save) return;
  const Named save{"--save", *a.save};
  const bool save_is_load = a.load && same_directory(*a.load, *a.save);
  if (a.load && !save_is_load)
    check_apart(save, {"--load", *a.load},
                "this run's saves would write among the checkpoints it loads, and --save is not that directory");
  if (a.non_persistent_save_interval) {
    const Named np{a.non_persistent_global_ckpt_dir ? "--non-persistent-global-ckpt-dir" : "--save's non_persistent",
                   non_persistent_dir(a, *a.save)};
    check_apart(np, save,
                "non-persistent saves keep only their latest iteration, so they would delete the persistent "
                "checkpoints and take over their tracker (the default is <save>/non_persistent)");
    if (a.load && !save_is_load)
      check_apart(np, {"--load", *a.load},
                  "non-persistent saves would rewrite the tracker of the checkpoint this run loads and delete its "
                  "iterations, and --save is not that directory");
  }
  if (a.finetune && save_is_load) {
    const std::string holds = checkpoint::training_checkpoint_contents(*a.save);
    if (!holds.empty())
      fail(
          "--finetune with --load and --save both {}: it holds {}; a fine-tuning run counts its iterations from 0 "
          "again, so its saves would replace the checkpoints of the same steps and move the tracker back; give "
          "--save a directory of its own",
          *a.save, holds);
  }
}

SaveDirLocks::SaveDirLocks(const CheckpointArgs& a) {
  if (!a.save) return;
  locks_.emplace_back("--save", *a.save);
  if (a.non_persistent_save_interval) {
    const std::string np = non_persistent_dir(a, *a.save);
    if (!entry_within(resolved(*a.save), resolved(np))) locks_.emplace_back("--non-persistent-global-ckpt-dir", np);
  }
  for (const checkpoint::SaveDirLock& l : locks_) exit_signal::remove_at_death(l.path());
}

SaveDirLocks::~SaveDirLocks() {
  for (const checkpoint::SaveDirLock& l : locks_) exit_signal::forget(l.path());
}

}  // namespace gptrain
