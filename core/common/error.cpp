#include "core/common/error.h"

#include "core/common/log.h"

#include <cstdio>
#include <new>

namespace gptrain {

int run_main(const char* app, int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", app, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of host memory\n", app);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", app, e.what());
  }
  std::fflush(stderr);
  return 1;
}

}  // namespace gptrain
