// MPI start-up and shut-down for gptrain processes. One MpiRuntime lives in main() of an app that may
// run under mpirun/srun. It initialises MPI (errors are returned, not fatal, so they become Errors
// with a message), checks that MPI's world agrees with the launcher's environment, and sets the
// logger's rank prefix.
//
// Failure policy: a rank that fails must take the job down, otherwise its peers wait in the next
// collective. run_mpi_main() prints the error with the rank's number and calls MPI_Abort, which makes
// mpirun/srun kill every rank; a rank killed from outside is reported by mpirun itself ("process rank
// N ... exited on signal 9"); a peer that is alive but stuck is caught by the communicators' timeout.
#pragma once

#include "parallel/launch/launch_env.h"

#include <string>

namespace gptrain::parallel {

class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();  // MPI_Finalize (or MPI_Abort when unwinding from an exception with peers alive)
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return size_; }
  const LaunchEnv& launch() const { return env_; }
  // Ends every rank of the job (MPI_Abort on the world) after printing why, naming this rank.
  [[noreturn]] void abort_job(const std::string& why, int code = 1) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  LaunchEnv env_;
};

// run_main for MPI apps: like gptrain::run_main, and on any error prints "[rank r] app: error: ..."
// and aborts the whole job (every rank) so no peer hangs.
int run_mpi_main(const char* app, int (*body)(MpiRuntime&, int, char**), int argc, char** argv);

}  // namespace gptrain::parallel
