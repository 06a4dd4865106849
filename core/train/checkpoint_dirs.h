// How --save, --load and the non-persistent save directory may lie relative to each other. A run writes only into
// its own save directories: never into --load (unless --save is that directory), never one save directory over
// the other's checkpoints.
#pragma once

#include "core/config/checkpoint_args.h"

#include <string>

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

}  // namespace gptrain
