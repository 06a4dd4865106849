#include "parallel/comm/mpi_roll_call.h"

#include "core/common/error.h"

#include <chrono>
#include <thread>

namespace gptrain::parallel {

namespace {
constexpr int kAsk = 1;
constexpr int kHere = 2;

// A one-int message nobody waits for: posted and released (MPI completes it in the background; the
// buffer is static so that it outlives the send).
void post(int peer, int tag, MPI_Comm comm) {
  static const int kOne = 1;
  MPI_Request r;
  if (MPI_Isend(&kOne, 1, MPI_INT, peer, tag, comm, &r) == MPI_SUCCESS) MPI_Request_free(&r);
}
}  // namespace

MpiRollCall::MpiRollCall(MPI_Comm comm) {
  check(MPI_Comm_dup(comm, &comm_) == MPI_SUCCESS, "MPI_Comm_dup for a roll-call channel failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiRollCall::~MpiRollCall() { MPI_Comm_free(&comm_); }

void MpiRollCall::answer() {
  for (;;) {
    int pending = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kAsk, comm_, &pending, &st) != MPI_SUCCESS || !pending) return;
    int ignored = 0;
    MPI_Recv(&ignored, 1, MPI_INT, st.MPI_SOURCE, kAsk, comm_, MPI_STATUS_IGNORE);
    post(st.MPI_SOURCE, kHere, comm_);
  }
}

std::vector<int> MpiRollCall::absent(double grace_seconds) {
  std::vector<MPI_Request> replies(size_, MPI_REQUEST_NULL);
  std::vector<int> got(size_, 0);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    post(p, kAsk, comm_);
    MPI_Irecv(&got[p], 1, MPI_INT, p, kHere, comm_, &replies[p]);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  for (;;) {
    answer();
    bool all = true;
    for (MPI_Request& r : replies) {
      int done = 0;
      if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);  // a completed request becomes NULL
      all = all && r == MPI_REQUEST_NULL;
    }
    if (all || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> missing;
  for (int p = 0; p < size_; ++p) {
    if (replies[p] == MPI_REQUEST_NULL) continue;
    missing.push_back(p);
    MPI_Cancel(&replies[p]);
    MPI_Request_free(&replies[p]);
  }
  return missing;
}

}  // namespace gptrain::parallel
