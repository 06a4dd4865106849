// How --save, --load and the non-persistent save directory may lie relative to each other, and the locks a run
// holds on the directories it saves into. A run writes only into its own save directories: never into --load
// (unless --save is that directory), never one save directory over the other's checkpoints.
#pragma once

#include "core/checkpoint/save_dir_lock.h"
#include "core/config/checkpoint_args.h"

#include <vector>

namespace gptrain {

// Fails, naming both flags, when a directory this run saves into is, or lies inside, another's under a name the
// other's checkpoints use (iter_*, release, their temporaries, the tracker): the non-persistent directory and
// --save (its saves keep only the latest, deleting the persistent ones), either of them and --load when --save is
// another directory; and --finetune with --load = --save holding a checkpoint (the fine-tuning run starts again at
// iteration 0, replacing the same steps and moving the tracker back). A directory of its own inside another (as
// the default <save>/non_persistent) is fine.
void check_checkpoint_dirs(const CheckpointArgs& a);

// Whether two flags name one directory (symbolic links, ".", ".." and a trailing "/" resolved).
bool same_directory(const std::string& a, const std::string& b);

// The locks of the directories a run saves into: --save and, when it is not inside --save, the non-persistent
// save directory (checkpoint::SaveDirLock); none without --save. Taking one another run holds is an Error naming
// that run. A terminating signal (SIGTERM, SIGINT) removes the lock files before the process dies of it.
class SaveDirLocks {
 public:
  explicit SaveDirLocks(const CheckpointArgs& a);
  ~SaveDirLocks();
  SaveDirLocks(const SaveDirLocks&) = delete;
  SaveDirLocks& operator=(const SaveDirLocks&) = delete;

 private:
  std::vector<checkpoint::SaveDirLock> locks_;
};

}  // namespace gptrain
