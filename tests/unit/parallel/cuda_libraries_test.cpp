// The CUDA backend's libraries (lib/libgptrain_cuda.so, lib/libgptrain_nccl.so) load on first use, with
// every gptrain function they call found in this executable; a build without CUDA, a missing library
// and a missing function are Errors that say which.
#include "core/common/error.h"
#include "core/common/plugin.h"
#include "kernels/backend.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/self_communicator.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <string>

using namespace gptrain;

namespace {

bool has_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST_CASE("cuda libraries: each loads, exports its entry points, and finds what it calls", "[parallel]") {
  if (!plugin::built()) {
    REQUIRE_THROWS_WITH(make_backend("cuda", DType::F32),
                        Catch::Contains("--device cuda: this build has no CUDA backend"));
    auto self = parallel::make_self_communicator("dp", {});
    REQUIRE_THROWS_WITH(parallel::make_nccl_group(*self, {}), Catch::Contains("this build has no CUDA backend"));
    REQUIRE(cuda_device_count() == 0);
    return;
  }
  // RTLD_NOW: loading fails on any symbol the libraries need and this executable does not export.
  for (const char* name : {"gptrain_cuda_make_backend", "gptrain_cuda_device_count", "gptrain_cuda_make_offload_stream",
                           "gptrain_cuda_make_nvtx_profile_backend"})
    REQUIRE(plugin::symbol("gptrain_cuda", name, "test") != nullptr);
  REQUIRE(plugin::symbol("gptrain_nccl", "gptrain_nccl_make_group", "test") != nullptr);
  REQUIRE_THROWS_WITH(plugin::symbol("gptrain_cuda", "gptrain_no_such_function", "test"),
                      Catch::Contains("test: libgptrain_cuda.so has no function gptrain_no_such_function"));
  if (!has_driver()) {
    // Loaded, then refused by the CUDA runtime's own check: the message is about the machine, not the library.
    REQUIRE(cuda_device_count() == 0);
    REQUIRE_THROWS_WITH(make_backend("cuda", DType::F32), Catch::Contains("no NVIDIA driver found"));
  }
}

TEST_CASE("cuda libraries: a library that is not there is named with the folders searched", "[parallel]") {
  if (!plugin::built()) {
    REQUIRE_THROWS_WITH(plugin::symbol("gptrain_missing", "f", "testing"),
                        Catch::Contains("testing: this build has no CUDA backend"));
    return;
  }
  try {
    plugin::symbol("gptrain_missing", "f", "testing");
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::StartsWith("testing: libgptrain_missing.so was not found (looked in "));
    CHECK_THAT(m, Catch::Contains("/lib/libgptrain_missing.so, "));  // the executable's ../lib first
    CHECK_THAT(m, Catch::Contains("keep the build's lib/ folder beside its bin/ folder"));
  }
}
