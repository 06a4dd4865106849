// gptrain_preflight: check a multi-process launch before training. Prints the launch environment of
// every rank, builds the process grid from the parallel flags, and times an all-reduce over the world,
// printing algorithm and bus bandwidth. Seconds for the default 64 MiB on a few CPU ranks.
//
//   mpirun -np 4 build/bin/gptrain_preflight --tensor-model-parallel-size 2 --size-mb 64 --iters 5
#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/backend.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/launch/mpi_runtime.h"
#include "parallel/train/options.h"
#include "parallel/launch/preflight.h"

#include <CLI/CLI.hpp>

#include <cstdlib>

namespace {

int body(gptrain::parallel::MpiRuntime& mpi, int argc, char** argv) {
  using namespace gptrain;
  parallel::ParallelOptions popt;
  double size_mb = 64.0;
  int iters = 5;
  int repeat = 1;
  std::string device = "cpu";
  CLI::App app{"gptrain_preflight: launch check and all-reduce bus bandwidth"};
  parallel::add_parallel_flags(app, popt);
  app.add_option("--size-mb", size_mb, "all-reduce size in MiB (fp32)")->check(CLI::PositiveNumber);
  app.add_option("--iters", iters, "timed all-reduces per measurement")->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "measurements (a long --repeat keeps the job busy, e.g. for failure tests)")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", device, "cpu (host buffers) | cuda (device buffers; NCCL unless --distributed-backend mpi)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      if (mpi.rank() == 0) std::exit(app.exit(e));
      return 0;
    }
    fail("{}", e.what());
  }
  parallel::validate_parallel_options(popt);
  parallel::ProcessGrid grid(mpi.world_size(), mpi.rank(), popt.grid_sizes());
  const parallel::LaunchEnv& env = mpi.launch();
  log::info("launch {}: local rank {} of {}; {}", env.source, env.local_rank, env.local_size, grid.describe());

  std::unique_ptr<Backend> be = device == "cuda" ? make_backend("cuda", DType::F32) : nullptr;
  const std::string comm = parallel::resolve_comm_backend(popt, device);
  parallel::CommOptions copt;
  copt.deterministic = popt.deterministic_mode;
  copt.timeout_seconds = popt.timeout_seconds();
  copt.staging = be.get();
  parallel::GridComms comms = parallel::make_grid_comms(grid, copt, comm);
  const auto bytes = static_cast<std::size_t>(size_mb * 1024.0 * 1024.0);
  for (int r = 0; r < repeat; ++r) {
    parallel::PreflightResult res = parallel::allreduce_preflight(*comms.world, be.get(), bytes, iters);
    check(res.correct, "preflight all-reduce gave a wrong sum: the transport is broken");
    if (mpi.rank() == 0)
      log::info("preflight all_reduce {:.1f} MiB over {} ranks ({}, {}): {:.3f} ms, algbw {:.2f} GB/s, busbw {:.2f} GB/s",
                static_cast<double>(res.bytes) / (1 << 20), mpi.world_size(), comm, device == "cuda" ? "device" : "host",
                res.seconds_per_iter * 1e3, res.algbw_gb_s, res.busbw_gb_s);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("gptrain_preflight", body, argc, argv); }
