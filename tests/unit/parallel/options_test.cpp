// pretrain_gpt's parsed flags map onto the parallel options (the seam between core/config and
// parallel/), including --distributed-timeout-minutes; bad values are refused with the flag's name.
#include "core/common/error.h"
#include "core/config/train_args.h"
#include "parallel/train/options.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gptrain;

TEST_CASE("parallel options from pretrain_gpt flags", "[parallel]") {
  std::vector<std::string> args = {"pretrain_gpt", "--num-layers", "4", "--hidden-size", "64", "--num-attention-heads",
                                   "4", "--seq-length", "32", "--max-position-embeddings", "64", "--micro-batch-size",
                                   "1", "--train-iters", "10", "--lr", "1e-3", "--mock-data",
                                   "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
                                   "--num-layers-per-virtual-pipeline-stage", "1", "--sequence-parallel",
                                   "--use-distributed-optimizer", "--distributed-timeout-minutes", "0.5"};
  std::vector<const char*> argv;
  for (auto& s : args) argv.push_back(s.c_str());
  TrainArgs a = parse_train_args(int(argv.size()), argv.data(), 8);
  parallel::ParallelOptions o = parallel::parallel_options_from(a);
  CHECK(o.tensor_model_parallel_size == 2);
  CHECK(o.pipeline_model_parallel_size == 2);
  CHECK(o.num_layers_per_virtual_pipeline_stage == 1);
  CHECK(o.sequence_parallel);
  CHECK(o.use_distributed_optimizer);
  CHECK(o.timeout_seconds() == 30.0);
  CHECK(o.grid_sizes().tp == 2);
  REQUIRE_NOTHROW(parallel::validate_parallel_options(o));
  o.distributed_timeout_minutes = 0;
  REQUIRE_THROWS_WITH(parallel::validate_parallel_options(o), Catch::Contains("--distributed-timeout-minutes"));
  CHECK(parallel::resolve_comm_backend(parallel::ParallelOptions{}, "cpu") == "mpi");
  CHECK(parallel::resolve_comm_backend(parallel::ParallelOptions{}, "cuda") == "nccl");
}
