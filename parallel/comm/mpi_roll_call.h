// Which ranks of an MPI group are missing from a call that timed out. MPI cannot say who has not joined a
// collective, so each group keeps a side channel: a rank that waits on the group answers roll calls
// while it polls, and a rank that timed out calls the roll. A rank that does not answer within the grace
// period (stopped, dead, or busy outside this group's calls) is the one the others wait for.
#pragma once

#include <mpi.h>

#include <vector>

namespace gptrain::parallel {

class MpiRollCall {
 public:
  // Duplicates `comm` (collective over the group, like every communicator creation).
  explicit MpiRollCall(MPI_Comm comm);
  ~MpiRollCall();
  MpiRollCall(const MpiRollCall&) = delete;
  MpiRollCall& operator=(const MpiRollCall&) = delete;

  // Answers the roll calls that peers have sent (one MPI_Iprobe when there are none). Call while polling.
  void answer();
  // Asks every other rank of the group and waits up to grace_seconds (answering peers meanwhile).
  // Returns the group ranks that did not answer, ascending.
  std::vector<int> absent(double grace_seconds);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace gptrain::parallel
