#include "parallel/launch/mpi_runtime.h"

#include "core/common/agreed_error.h"
#include "core/common/error.h"
#include "core/common/log.h"

#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

namespace gptrain::parallel {

namespace {

// Open MPI's MPI_Abort prints a banner (and mpirun then a note per further aborting rank) around the
// line that says what went wrong; ompi_mpi_abort, which MPI_Abort calls after the banner, ends the job
// the same way without it. Other MPI libraries: MPI_Abort.
[[noreturn]] void abort_world(int code) {
  using OmpiAbort = int (*)(MPI_Comm, int);
  if (auto ompi_abort = reinterpret_cast<OmpiAbort>(dlsym(RTLD_DEFAULT, "ompi_mpi_abort")))
    ompi_abort(MPI_COMM_WORLD, code);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  check(!initialized, "MPI initialised twice: keep one MpiRuntime per process");
  env_ = discover_launch_env();
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) fail("MPI_Init_thread failed");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  log::set_rank(rank_, size_);
  // The launcher's variables decide the GPU (local rank) before MPI exists; they must agree with MPI.
  if (env_.source == "torchrun" && env_.world_size != size_) {
    abort_job(fmt::format(
        "started by torchrun (RANK={}, WORLD_SIZE={}) but gptrain joins its processes with MPI, which sees {} "
        "process(es): the processes would train on their own. Launch with `mpirun -np {} ...`, `srun --ntasks {} ...` "
        "or scripts/launch_mpi.sh instead",
        env_.rank, env_.world_size, size_, env_.world_size, env_.world_size));
  }
  if (env_.source != "single" && (env_.rank != rank_ || env_.world_size != size_)) {
    abort_job(fmt::format("{} environment says rank {} of {}, MPI says rank {} of {}: mixed launchers?", env_.source,
                          env_.rank, env_.world_size, rank_, size_));
  }
  if (env_.source == "single" && size_ > 1) {
    env_.rank = rank_;
    env_.world_size = size_;
  }
}

MpiRuntime::~MpiRuntime() {
  if (std::uncaught_exceptions() > 0 && size_ > 1) {
    // Peers may be waiting for this rank in a collective; MPI_Finalize would hang with them.
    std::fprintf(stderr, "[rank %d] error: leaving with an exception; aborting all %d ranks\n", rank_, size_);
    std::fflush(stderr);
    abort_world(1);
  }
  MPI_Finalize();
}

void MpiRuntime::abort_job(const std::string& why, int code) const {
  std::fprintf(stderr, "[rank %d] fatal: %s\n[rank %d] aborting all %d ranks of the job\n", rank_, why.c_str(), rank_,
               size_);
  std::fflush(stderr);
  std::fflush(stdout);
  abort_world(code);
}

int run_mpi_main(const char* app, int (*body)(MpiRuntime&, int, char**), int argc, char** argv) {
  std::string what;  // "error: ..." or "internal error: ..."
  try {
    MpiRuntime mpi(&argc, &argv);
    try {
      return body(mpi, argc, argv);
    } catch (const AgreedError& e) {
      what = fmt::format("error: {}", e.what());
      if (mpi.world_size() > 1) {
        // Every rank is here with the same message: each says so and finalizes; nobody waits for anybody.
        std::fprintf(stderr, "[rank %d] fatal: %s: %s\n", mpi.rank(), app, what.c_str());
        std::fflush(stderr);
        std::fflush(stdout);
        return 1;
      }
    } catch (const Error& e) {
      what = fmt::format("error: {}", e.what());
    } catch (const std::bad_alloc&) {
      what = "error: out of host memory";
    } catch (const std::exception& e) {
      what = fmt::format("internal error: {}", e.what());
    }
    if (mpi.world_size() > 1) mpi.abort_job(fmt::format("{}: {}", app, what));
  } catch (const std::exception& e) {  // MPI start-up itself failed
    what = fmt::format("error: {}", e.what());
  }
  std::fprintf(stderr, "%s: %s\n", app, what.c_str());
  std::fflush(stderr);
  return 1;
}

}  // namespace gptrain::parallel
