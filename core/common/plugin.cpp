#include "core/common/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "core/common/error.h"

namespace gptrain::plugin {

namespace fs = std::filesystem;

bool built() {
#ifdef GPTRAIN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

// Where a build or an install keeps its libraries relative to its executables: bin/ and lib/ side by
// side, or everything in one folder.
std::vector<fs::path> candidates(const std::string& file) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return {exe.parent_path().parent_path() / "lib" / file, exe.parent_path() / file};
}

void* open(const char* library, const char* what) {
  const std::string file = fmt::format("lib{}.so", library);
  check(built(),
        "{}: this build has no CUDA backend (configured with GPTRAIN_CUDA=OFF or no CUDA toolkit found); "
        "reconfigure with -DGPTRAIN_CUDA=ON and rebuild, or run on the CPU",
        what);
  // RTLD_NOW: a library that does not fit this executable fails here, with the symbol named, rather
  // than in the middle of a run.
  std::string looked;
  for (const fs::path& path : candidates(file)) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      looked += (looked.empty() ? "" : ", ") + path.string();
      continue;
    }
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    fail(
        "{}: cannot load {} ({}); the CUDA libraries it links (CUDA runtime, cuBLAS, cuDNN, NCCL) must be "
        "installed and on the library path (LD_LIBRARY_PATH or ldconfig)",
        what, path.string(), dlerror());
  }
  if (void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  fail(
      "{}: {} was not found (looked in {} and the library search path); keep the build's lib/ folder beside "
      "its bin/ folder ({})",
      what, file, looked.empty() ? "no folder" : looked, dlerror());
}

}  // namespace

void* symbol(const char* library, const char* name, const char* what) {
  static std::mutex mu;
  static std::map<std::string, void*> handles;  // never closed: their code may run until exit
  std::lock_guard<std::mutex> lock(mu);
  void*& h = handles[library];
  if (h == nullptr) h = open(library, what);
  void* f = dlsym(h, name);
  check(f != nullptr, "{}: lib{}.so has no function {} (a library from another gptrain build?)", what, library, name);
  return f;
}

}  // namespace gptrain::plugin
