// gptrain_preflight: check a multi-process launch before training. Prints the launch environment of
// every rank, builds the process grid from the parallel flags (the same flags as pretrain_gpt), and
// times an all-reduce over the world, printing algorithm and bus bandwidth. Seconds for the default
// 64 MiB on a few CPU ranks.
//
//   mpirun -np 4 build/bin/gptrain_preflight --tensor-model-parallel-size 2 --size-mb 64 --iters 5
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/train/setup.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/launch/local_gpu.h"
#include "parallel/launch/mpi_runtime.h"
#include "parallel/launch/preflight.h"

namespace {

int body(gptrain::parallel::MpiRuntime& mpi, int argc, char** argv) {
  using namespace gptrain;
  TrainArgs a;  // only its parallel and backend flags are bound
  double size_mb = 64.0;
  int iters = 5;
  int repeat = 1;
  FlagTable t = train_flag_table(a).only_groups({"parallel", "backend"});
  t.group("gptrain_preflight");
  t.value("size-mb", &size_mb, "all-reduce size in MiB (fp32)");
  t.value("iters", &iters, "timed all-reduces per measurement");
  t.value("repeat", &repeat, "measurements (a long --repeat keeps the job busy, e.g. for failure tests)");
  if (!t.parse("gptrain_preflight", argc, argv)) return 0;
  check(size_mb > 0 && iters >= 1 && repeat >= 1, "--size-mb must be > 0, --iters and --repeat >= 1");
  validate_parallel_args(a.parallel);
  parallel::ProcessGrid grid(mpi.world_size(), mpi.rank(), parallel::grid_sizes(a.parallel));
  const parallel::LaunchEnv& env = mpi.launch();
  log::info("launch {}: local rank {} of {}; {}", env.source, env.local_rank, env.local_size, grid.describe());

  // --device cpu: host buffers; cuda (or auto with a GPU): device buffers on the local rank's GPU.
  std::unique_ptr<Backend> be;
  if (planned_backend_name(a) == "cuda") be = make_training_backend(a, parallel::local_gpu(a, env));
  const std::string device = be ? "cuda" : "cpu";
  const std::string transport = parallel::comm_transport(a.parallel, device, true);
  parallel::GridComms comms =
      parallel::make_grid_comms(grid, parallel::comm_options(a.parallel, a.backend, be.get()), transport);
  const auto bytes = static_cast<std::size_t>(size_mb * 1024.0 * 1024.0);
  for (int r = 0; r < repeat; ++r) {
    parallel::PreflightResult res = parallel::allreduce_preflight(*comms.world, be.get(), bytes, iters);
    check(res.correct, "preflight all-reduce gave a wrong sum: the transport is broken");
    if (mpi.rank() == 0)
      log::info(
          "preflight all_reduce {:.1f} MiB over {} ranks ({}, {}): {:.3f} ms, algbw {:.2f} GB/s, busbw {:.2f} GB/s "
          "(communicators: {})",
          static_cast<double>(res.bytes) / (1 << 20), mpi.world_size(), comms.world->transport(),
          be ? "device" : "host", res.seconds_per_iter * 1e3, res.algbw_gb_s, res.busbw_gb_s,
          parallel::describe(*comms.world));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("gptrain_preflight", body, argc, argv); }
