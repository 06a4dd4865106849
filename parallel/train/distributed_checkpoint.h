// Sharded checkpoints of DistributedGpt + DataParallelOptimizer in gptrain format v1
// (docs/checkpoint-format.md, core/checkpoint): every TP x PP rank of DP replica 0 writes its model
// pieces (and optimizer moments, gathered over DP first when the optimizer is distributed) under
// global names, with the slice of the global tensor each piece is. Loading reassembles whatever the
// checkpoint holds and cuts this rank's pieces, so --load works across TP/PP/DP layouts (and across
// vocabulary paddings: rows beyond the smaller padded vocabulary are never real tokens).
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "parallel/data_parallel/dp_optimizer.h"

#include <string>

namespace gptrain::parallel {

// Collective over the world. `meta` supplies what the training loop knows (consumed samples, args,
// scheduler, rng, model description); iteration and layout are filled in here.
void save_distributed_checkpoint(const std::string& save_dir, checkpoint::Step step, DistributedGpt& model,
                                 DataParallelOptimizer& opt, checkpoint::Metadata meta, bool save_optim = true);

// Collective over the world (every rank reads the files it needs); loads the optimizer state with
// load_optim (an Error when the checkpoint has none).
void load_distributed_checkpoint(const checkpoint::Checkpoint& ck, DistributedGpt& model, DataParallelOptimizer& opt,
                                 bool load_optim);

}  // namespace gptrain::parallel
