// Sharded checkpoints of DistributedGpt + DataParallelOptimizer in gptrain format v1
// (docs/checkpoint-format.md, core/checkpoint): every TP x PP rank of DP replica 0 writes its model
// pieces (and optimizer moments, gathered over DP first when the optimizer is distributed) under
// global names, with the slice of the global tensor each piece is. Loading reassembles whatever the
// checkpoint holds and cuts this rank's pieces, so --load works across TP/PP/DP layouts (and across
// vocabulary paddings: rows beyond the smaller padded vocabulary are never real tokens).
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "parallel/data_parallel/dp_optimizer.h"

#include <memory>
#include <optional>
#include <string>

namespace gptrain::parallel {

// A save in three steps, so that the files can be written on another thread (--async-save):
// 1. snapshot_for_save (collective over the world): rank 0 prepares the temporary directory, every rank
//    takes host copies of what it saves (moments gathered over DP first). `meta` supplies what the training
//    loop knows (consumed samples, args, scheduler, rng, model description); iteration and layout are
//    filled in here.
// 2. write_snapshot_files (local, any thread): DP rank 0 of each TP x PP rank writes its tensor files from
//    the copies (with expert parallelism DP ranks 1 .. EP-1 write their routed experts too); the model may
//    train on meanwhile.
// 3. commit_snapshot (collective): the ranks agree that every file was written (else every rank throws the
//    first rank's error and nothing is committed), rank 0 writes metadata.json and commits.
struct SaveSnapshot;
std::shared_ptr<SaveSnapshot> snapshot_for_save(const std::string& save_dir, checkpoint::Step step,
                                                DistributedGpt& model, DataParallelOptimizer& opt,
                                                checkpoint::Metadata meta, bool save_optim);
void write_snapshot_files(const SaveSnapshot& snap);
// `write_error`: what step 2 threw on this rank, if anything.
void commit_snapshot(const SaveSnapshot& snap, Communicator& world, const std::optional<std::string>& write_error);
checkpoint::Step snapshot_step(const SaveSnapshot& snap);

// The three steps in a row. Collective over the world.
void save_distributed_checkpoint(const std::string& save_dir, checkpoint::Step step, DistributedGpt& model,
                                 DataParallelOptimizer& opt, checkpoint::Metadata meta, bool save_optim = true);

// Collective over the world (every rank reads the files it needs); loads the optimizer state with
// load_optim (an Error when the checkpoint has none).
void load_distributed_checkpoint(const checkpoint::Checkpoint& ck, DistributedGpt& model, DataParallelOptimizer& opt,
                                 bool load_optim);

// --moe-use-upcycling (collective): `ck` is a dense model's checkpoint (an MoE one is an Error); this MoE model
// takes its tensors, each MoE layer's experts a copy of that layer's dense MLP and its router as initialised
// (Megatron's granularity-1 upcycling: with renormalised top-k probabilities the first forward is the dense
// model's). The optimizer state stays fresh; any layout (TP, PP, EP) reads its pieces.
void upcycle_dense_checkpoint(const checkpoint::Checkpoint& ck, DistributedGpt& model, DataParallelOptimizer& opt);

}  // namespace gptrain::parallel
