// gptrain_version: prints what this build holds (backends, CUDA archs). Handy in bug reports.
#include "core/common/error.h"
#include "core/config/flag_table.h"
#include "kernels/backend.h"

#include <cstdio>

namespace {
int body(int argc, char** argv) {
  gptrain::FlagTable t;  // no flags: --help, and anything else is refused by name
  if (!t.parse("gptrain_version", argc, argv)) return 0;
#ifdef GPTRAIN_HAVE_CUDA
  std::printf("gptrain: backends cpu, cuda\n");
#else
  std::printf("gptrain: backends cpu\n");
#endif
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("gptrain_version", body, argc, argv); }
