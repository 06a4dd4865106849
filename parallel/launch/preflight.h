// Preflight: one all-reduce benchmark over the world before training, to catch a broken fabric or a
// wrong launch early and to print bus bandwidth (the nccl-tests convention: busbw = algbw * 2(n-1)/n,
// comparable across world sizes and with the link's rated bandwidth).
#pragma once

#include "parallel/comm/communicator.h"

#include <cstddef>

namespace gptrain {
class Backend;
}

namespace gptrain::parallel {

struct PreflightResult {
  std::size_t bytes = 0;
  int iters = 0;
  double seconds_per_iter = 0;
  double algbw_gb_s = 0;  // bytes / time
  double busbw_gb_s = 0;  // algbw * 2(n-1)/n
  bool correct = false;   // every element equals n(n+1)/2 after summing rank+1 over ranks
};

// Buffers in `device`'s memory when non-null, else host memory. Collective over comm.
PreflightResult allreduce_preflight(Communicator& comm, Backend* device, std::size_t bytes, int iters);

}  // namespace gptrain::parallel
