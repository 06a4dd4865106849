// A writer killed by a signal leaves "<prefix>.bin.tmp.<pid>.<id>": the next writer of the same prefix
// removes it, and nothing that is not a dead writer's temporary of that prefix.
#include "data/indexed/indexed_dataset.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace fs = std::filesystem;

TEST_CASE("indexed writer: a killed writer's temporaries go at the next run of the same prefix", "[data]") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gptrain_test_idxtmp_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string prefix = (dir / "corpus_text_document").string();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGTERM, SIG_DFL);  // not the test framework's handler
    gptrain::IndexedDatasetWriter w(prefix, gptrain::IndexDType::uint16);
    const std::vector<int32_t> tokens{1, 2, 3};
    w.add_sequence(tokens);
    ::raise(SIGTERM);  // the default action: no destructor runs
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  const auto temporaries = [&] {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("corpus_text_document.bin.tmp." + std::to_string(child) + ".", 0) == 0)
        v.push_back(e.path().filename().string());
    return v;
  };
  const std::vector<std::string> left = temporaries();
  REQUIRE(left.size() == 1);
  // Not ours to remove: another prefix's, a live process's (our parent's), a name of another form.
  const std::vector<std::string> keep{"other_text_document.bin.tmp." + std::to_string(child) + ".ab",
                                      "corpus_text_document.bin.tmp." + std::to_string(::getppid()) + ".ab",
                                      "corpus_text_document.bin.tmp.notes",
                                      "corpus_text_document.bin.tmp." + std::to_string(child) + ".ab.keep"};
  for (const auto& n : keep) std::ofstream(dir / n) << "x";
  {
    gptrain::IndexedDatasetWriter w(prefix, gptrain::IndexDType::uint16);
    const std::vector<int32_t> tokens{4, 5};
    w.add_sequence(tokens);
    w.finalize();
  }
  CHECK_FALSE(fs::exists(dir / left[0]));
  for (const auto& n : keep) CHECK(fs::exists(dir / n));
  CHECK(fs::exists(prefix + ".bin"));
  fs::remove_all(dir);
}
