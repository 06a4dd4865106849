// Which GPU a rank drives: the local rank from mpirun, srun or a torchrun-style environment, against the
// GPUs the process sees; and which communicators a job gets from the parallel and backend flags.
#include "core/common/error.h"
#include "core/config/train_args.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/launch/launch_env.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("launch environment from OpenMPI, PMI, SLURM or none", "[parallel]") {
  LaunchEnv e = discover_launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                            {"OMPI_COMM_WORLD_SIZE", "8"},
                                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                            {"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "1"}}));
  CHECK(e.source == "openmpi");
  CHECK(e.rank == 3);
  CHECK(e.world_size == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.local_size == 2);

  e = discover_launch_env(env_of({{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"MPI_LOCALRANKID", "1"}}));
  CHECK(e.source == "pmi");
  CHECK(e.rank == 5);
  CHECK(e.local_rank == 1);

  e = discover_launch_env(env_of(
      {{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS_PER_NODE", "4(x4)"}}));
  CHECK(e.source == "slurm");
  CHECK(e.rank == 7);
  CHECK(e.world_size == 16);
  CHECK(e.local_rank == 3);
  CHECK(e.local_size == 4);

  // srun sets the step's tasks per node (a compressed list, one entry per node of the step) whether or
  // not the job asked for --ntasks-per-node; this node's entry is the one at SLURM_NODEID.
  e = discover_launch_env(env_of({{"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_LOCALID", "0"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "2"},
                                  {"SLURM_NODEID", "0"}}));
  CHECK(e.local_size == 2);
  e = discover_launch_env(env_of({{"SLURM_PROCID", "6"},
                                  {"SLURM_NTASKS", "7"},
                                  {"SLURM_LOCALID", "0"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "3(x2),1"},
                                  {"SLURM_NODEID", "2"}}));
  CHECK(e.local_size == 1);
  e = discover_launch_env(env_of({{"SLURM_PROCID", "3"},
                                  {"SLURM_NTASKS", "7"},
                                  {"SLURM_LOCALID", "0"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "3(x2),1"},
                                  {"SLURM_NODEID", "1"},
                                  {"SLURM_NTASKS_PER_NODE", "4"}}));
  CHECK(e.local_size == 3);

  e = discover_launch_env(env_of({}));
  CHECK(e.source == "single");
  CHECK(e.world_size == 1);

  REQUIRE_THROWS_WITH(discover_launch_env(env_of({{"PMI_RANK", "x1"}, {"PMI_SIZE", "2"}})),
                      Catch::Contains("PMI_RANK=x1"));
  REQUIRE_THROWS_WITH(discover_launch_env(env_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}})),
                      Catch::Contains("SLURM_PROCID=4"));
}

TEST_CASE("local device: one GPU per local rank under mpirun, srun and torchrun-style launches", "[parallel]") {
  // Eight processes over two nodes of four GPUs: local rank r drives GPU r.
  const LaunchEnv ompi = discover_launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "6"},
                                                     {"OMPI_COMM_WORLD_SIZE", "8"},
                                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  CHECK(choose_local_device(ompi, 4).index == 2);
  CHECK_FALSE(choose_local_device(ompi, 4).shared);
  const LaunchEnv slurm = discover_launch_env(env_of(
      {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS_PER_NODE", "4(x2)"}}));
  CHECK(choose_local_device(slurm, 4).index == 1);
  const LaunchEnv torchrun =
      discover_launch_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"}}));
  CHECK(torchrun.source == "torchrun");
  CHECK(choose_local_device(torchrun, 4).index == 3);
  // A launcher that pins each process to its own GPU (srun --gpus-per-task=1): every process sees one.
  CHECK(choose_local_device(slurm, 1).index == 0);
  // More processes than GPUs on the node: shared round-robin, and said so.
  const LaunchEnv crowded = discover_launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                                        {"OMPI_COMM_WORLD_SIZE", "4"},
                                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  CHECK(choose_local_device(crowded, 2).index == 1);
  CHECK(choose_local_device(crowded, 2).shared);
  // MPI launchers win over torchrun-style variables (mpirun may inherit RANK from a wrapper script).
  const LaunchEnv both = discover_launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                                     {"OMPI_COMM_WORLD_SIZE", "2"},
                                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                     {"RANK", "0"},
                                                     {"WORLD_SIZE", "2"},
                                                     {"LOCAL_RANK", "0"}}));
  CHECK(both.source == "openmpi");
  CHECK(choose_local_device(both, 2).index == 1);
  // No launcher: device 0; no GPU visible: an error naming the local rank.
  CHECK(choose_local_device(discover_launch_env(env_of({})), 8).index == 0);
  REQUIRE_THROWS_WITH(choose_local_device(ompi, 0), Catch::Contains("local rank 2") && Catch::Contains("no GPU"));
}

TEST_CASE("communicators: transport and options from the flags", "[parallel]") {
  ParallelArgs p;
  BackendArgs b;
  CHECK(comm_transport(p, "cpu", true) == "mpi");
  CHECK(comm_transport(p, "cuda", true) == "nccl");
  CHECK(comm_transport(p, "cuda", false) == "self");  // a process without a launcher is a world of one
  p.distributed_backend = "mpi";
  CHECK(comm_transport(p, "cuda", true) == "mpi");
  p.distributed_backend = "nccl";
  REQUIRE_THROWS_WITH(comm_transport(p, "cpu", true), Catch::Contains("needs the cuda backend"));
  p.distributed_timeout_minutes = 0.5;
  b.deterministic_mode = true;
  const CommOptions o = comm_options(p, b, nullptr);
  CHECK(o.deterministic);
  CHECK(o.timeout_seconds == 30.0);
  // The communicators report what they were given (the start-up log line names it).
  ProcessGrid grid(1, 0, grid_sizes(p));
  GridComms comms = make_grid_comms(grid, o, "self");
  CHECK(describe(*comms.world) == "self, rank-ordered (deterministic) reductions, timeout 30 s");
  CHECK(comms.dp->options().deterministic);
  p.distributed_timeout_minutes = 0;
  REQUIRE_THROWS_WITH(validate_parallel_args(p), Catch::Contains("--distributed-timeout-minutes"));
}

TEST_CASE("self communicator: the collectives of a group of one", "[parallel]") {
  ProcessGrid grid(1, 0, GridSizes{});
  GridComms comms = make_grid_comms(grid, CommOptions{}, "self");
  Communicator& c = *comms.dp;
  CHECK(c.size() == 1);
  CHECK(c.rank() == 0);
  std::vector<float> x = {1, 2, 3}, y(3, 0);
  c.all_reduce(x.data(), 3, ElemType::F32, ReduceOp::Sum);
  CHECK(x == std::vector<float>{1, 2, 3});
  c.reduce_scatter(y.data(), x.data(), 3, ElemType::F32, ReduceOp::Sum);  // the one block is the result
  CHECK(y == x);
  std::vector<float> z(3, 0);
  c.iall_gather(z.data(), x.data(), 3, ElemType::F32)->wait();
  CHECK(z == x);
  c.batch_send_recv({}, ElemType::F32);  // nothing to move
  std::vector<float> v(3, 0);
  c.all_to_all_v(v.data(), {3}, x.data(), {3}, ElemType::F32);
  CHECK(v == x);
  REQUIRE_THROWS_WITH(c.all_to_all_v(v.data(), {2}, x.data(), {3}, ElemType::F32), Catch::Contains("sent = received"));
  CHECK(comms.ep->size() == 1);
  CHECK(comms.expert_dp->size() == 1);
  REQUIRE_THROWS_WITH(c.send(x.data(), 3, ElemType::F32, 1), Catch::Contains("no peer"));
  REQUIRE_THROWS_WITH(make_grid_comms(ProcessGrid(2, 0, GridSizes{}), CommOptions{}, "self"),
                      Catch::Contains("world of one"));
}
