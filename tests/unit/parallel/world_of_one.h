// A single process as the training path builds it: the world-of-one grid with self communicators,
// DistributedGpt (one chunk), DataParallelOptimizer and ParallelRunner, for tests that drive the real
// runner without MPI.
#pragma once

#include "parallel/comm/grid_comms.h"
#include "parallel/train/parallel_runner.h"

#include <memory>

namespace gptrain::test {

struct WorldOfOne {
  // cfg: the whole model (not finalized); make_vocab_size_divisible_by as the flag.
  WorldOfOne(Backend& be, const StageConfig& cfg, int make_vocab_size_divisible_by, ParallelArgs args = {},
             AdamWHyper hyper = {})
      : grid(1, 0, parallel::grid_sizes(args)),
        comms(parallel::make_grid_comms(grid, parallel::CommOptions{false, 60.0, &be}, "self")),
        model(cfg, make_vocab_size_divisible_by, args, grid, comms, be) {
    model.init_parameters();
    opt = std::make_unique<parallel::DataParallelOptimizer>(model, hyper);
    runner = std::make_unique<parallel::ParallelRunner>(model, *opt);
  }
  GptStage& stage() { return model.chunk(0); }

  parallel::ProcessGrid grid;
  parallel::GridComms comms;
  parallel::DistributedGpt model;
  std::unique_ptr<parallel::DataParallelOptimizer> opt;
  std::unique_ptr<parallel::ParallelRunner> runner;
};

}  // namespace gptrain::test
