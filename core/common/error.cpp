#include "core/common/error.h"

#include "core/common/log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace gptrain {

namespace {

// A standard stream closed by the caller (">&-") leaves its descriptor free: the next file opened, a
// checkpoint's, would get it and receive the log lines. Keep 0-2 taken by /dev/null.
void fill_closed_standard_streams(const char* app) {
  bool closed[3] = {};
  for (int fd = 0; fd < 3; ++fd) closed[fd] = ::fcntl(fd, F_GETFD) < 0 && errno == EBADF;
  for (int fd = 0; fd < 3; ++fd)
    if (closed[fd]) {
      const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (got >= 0 && got != fd) {
        ::dup2(got, fd);
        ::close(got);
      }
    }
  if (closed[1] && !closed[2])
    std::fprintf(stderr, "%s: warning: stdout was closed at start; its lines go to /dev/null\n", app);
}

}  // namespace

int run_main(const char* app, int (*body)(int, char**), int argc, char** argv) {
  fill_closed_standard_streams(app);
  // Past a file-size limit (ulimit -f) a write should fail with EFBIG, reported with its file, rather than
  // kill the process in the middle of a save.
  std::signal(SIGXFSZ, SIG_IGN);
  // A log reader that goes away (a closed pipe) turns into a failed write the logger reports, not a kill.
  std::signal(SIGPIPE, SIG_IGN);
  int rc = 1;
  try {
    rc = body(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", app, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of host memory\n", app);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", app, e.what());
  }
  std::fflush(stderr);
  // Under an address-space limit (ulimit -v) too small for OpenBLAS's 128 MiB buffer, its thread retries
  // the allocation for ever and its library destructor would wait for that thread at exit: leave without
  // library destructors. The work is done and closed by now (body's objects are gone); streams are flushed.
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return rc;
}

}  // namespace gptrain
