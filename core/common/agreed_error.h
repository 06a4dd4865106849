// An Error that every rank of a job throws at the same point, from values the ranks agreed on through a
// collective (a NaN loss, a checksum verdict, a failed save): under MPI each rank reports it and leaves
// through MPI_Finalize instead of aborting the job (parallel/launch/mpi_runtime.cpp), so no rank is killed
// before it has said why.
#pragma once

#include "core/common/error.h"

namespace gptrain {

class AgreedError : public Error {
 public:
  using Error::Error;
};

template <typename... Args>
[[noreturn]] void fail_agreed(fmt::format_string<Args...> f, Args&&... args) {
  throw AgreedError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace gptrain
