// Checkpoint saves that fail or are killed part-way (fault injection through GPTRAIN_FAULT_INJECT): the
// next load finds an intact checkpoint, errors name the intact copies, and stale temporaries are removed.
#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"

#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ck = gptrain::checkpoint;
namespace fs = std::filesystem;

namespace {

const gptrain::test::ScratchDir kFaultScratch("ckfault");

// Sets GPTRAIN_FAULT_INJECT for one scope.
struct FaultInjection {
  explicit FaultInjection(const char* spec) { ::setenv("GPTRAIN_FAULT_INJECT", spec, 1); }
  ~FaultInjection() { ::unsetenv("GPTRAIN_FAULT_INJECT"); }
};

// Saves one tensor "w" = {value, value} as `step` of save_dir.
void save_value(const std::string& save_dir, ck::Step step, float value) {
  const std::string tmp = ck::begin_save(save_dir, step);
  std::vector<float> w{value, value};
  const std::vector<ck::NamedTensor> tensors{{"w", {2}, w.data(), {}}};
  ck::write_tensor_file((fs::path(tmp) / ck::model_file_name(0, 0)).string(), tensors);
  ck::Metadata meta;
  meta.iteration = step.iteration;
  ck::write_metadata(tmp, meta);
  ck::commit_save(save_dir, step);
}

float load_value(const std::string& load_dir) {
  const auto c = ck::Checkpoint::open(load_dir);
  return c.read_global(ck::Checkpoint::Kind::model, "w").at(0);
}

bool has_entry(const fs::path& dir, const std::string& name) { return fs::exists(dir / name); }

}  // namespace

TEST_CASE("a re-save whose rename into place fails (EIO) rolls back to the previous save", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("rollback");
  save_value(dir.string(), ck::Step::at(4), 1.0f);
  std::string err;
  {
    FaultInjection f("rename:2");  // 1: iter_0000004 -> .old, 2: .tmp -> iter_0000004
    err = gptrain::test::error_text([&] { save_value(dir.string(), ck::Step::at(4), 2.0f); });
  }
  CHECK(err.find("Input/output error") != std::string::npos);
  CHECK(err.find("previous save of this step is back in place") != std::string::npos);
  CHECK(load_value(dir.string()) == 1.0f);
  CHECK_FALSE(has_entry(dir, ".iter_0000004.old"));
  // The failed save's temporary goes at the next save.
  save_value(dir.string(), ck::Step::at(6), 3.0f);
  CHECK_FALSE(has_entry(dir, ".iter_0000004.tmp"));
  CHECK(load_value(dir.string()) == 3.0f);
}

TEST_CASE("a re-save killed between its renames leaves a checkpoint the next load finds", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("killed");
  save_value(dir.string(), ck::Step::at(4), 1.0f);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setenv("GPTRAIN_FAULT_INJECT", "kill-at-rename:2", 1);
    try {
      save_value(dir.string(), ck::Step::at(4), 2.0f);
    } catch (...) {
    }
    ::_exit(0);  // not reached when the hook works
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  REQUIRE(has_entry(dir, ".iter_0000004.old"));
  REQUIRE_FALSE(has_entry(dir, "iter_0000004"));
  CHECK(load_value(dir.string()) == 1.0f);  // the previous copy, restored under its name
  CHECK(has_entry(dir, "iter_0000004"));
  CHECK_FALSE(has_entry(dir, ".iter_0000004.old"));
}

TEST_CASE("a tracker naming a missing directory: the error names the intact copies", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("intact");
  save_value(dir.string(), ck::Step::at(2), 1.0f);
  save_value(dir.string(), ck::Step::at(4), 2.0f);
  fs::rename(dir / "iter_0000004", dir / ".iter_0000004.tmp");
  const std::string err = gptrain::test::error_text([&] { ck::Checkpoint::open(dir.string()); });
  CHECK(err.find("no checkpoint for step 4") != std::string::npos);
  CHECK(err.find("intact checkpoint directories there: .iter_0000004.tmp, iter_0000002") != std::string::npos);
}

TEST_CASE("a failed tracker rename leaves no temp file and the tracker on the previous save", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("tracker");
  save_value(dir.string(), ck::Step::at(2), 1.0f);
  std::string err;
  {
    FaultInjection f("rename:2");  // 1: .tmp -> iter_0000004, 2: the tracker's temp file
    err = gptrain::test::error_text([&] { save_value(dir.string(), ck::Step::at(4), 2.0f); });
  }
  CHECK(err.find("tracker still names the previous save") != std::string::npos);
  CHECK(load_value(dir.string()) == 1.0f);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find("latest_checkpointed_iteration.txt.tmp") == std::string::npos);
}

TEST_CASE("a disk full at the tracker write names the cause and that the iteration is complete", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("enospc");
  std::string err;
  {
    FaultInjection f("tracker:1");
    err = gptrain::test::error_text([&] { save_value(dir.string(), ck::Step::at(3), 1.0f); });
  }
  CHECK(err.find("latest_checkpointed_iteration.txt") != std::string::npos);
  CHECK(err.find("No space left on device") != std::string::npos);
  CHECK(err.find("iter_0000003 is complete") != std::string::npos);
  CHECK(has_entry(dir, "iter_0000003/metadata.json"));
  CHECK_FALSE(has_entry(dir, "latest_checkpointed_iteration.txt"));
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find("latest_checkpointed_iteration.txt.tmp") == std::string::npos);
  // With a tracker naming an earlier save, the message says so.
  save_value(dir.string(), ck::Step::at(4), 2.0f);
  {
    FaultInjection f("tracker:1");
    err = gptrain::test::error_text([&] { save_value(dir.string(), ck::Step::at(6), 3.0f); });
  }
  CHECK(err.find("iter_0000006 is complete") != std::string::npos);
  CHECK(err.find("still names the previous save (4)") != std::string::npos);
  CHECK(err.find("--ckpt-step 6") != std::string::npos);
  CHECK(load_value(dir.string()) == 2.0f);
}

TEST_CASE("begin_save removes gptrain's stale temporaries and nothing else", "[checkpoint]") {
  const auto dir = kFaultScratch.fresh("stale");
  save_value(dir.string(), ck::Step::at(2), 1.0f);
  // A tracker temp of a process that has exited (a reaped child's pid), one of a live process (ours).
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const auto touch = [&](const std::string& n) { std::ofstream(dir / n) << "x"; };
  touch("latest_checkpointed_iteration.txt.tmp." + std::to_string(gone));
  touch("latest_checkpointed_iteration.txt.tmp." + std::to_string(::getppid()));
  fs::create_directories(dir / ".iter_0000003.tmp");       // a failed save of step 3
  fs::create_directories(dir / ".iter_0000002.old");       // step 2 is in place: stale
  fs::create_directories(dir / ".iter_0000003.tmpx");      // not ours
  fs::create_directories(dir / "iter_3.tmp");              // not ours
  fs::create_directories(dir / ".iter_0000001.deleting");  // a deletion (retention) killed part-way
  touch(".iter_0000001.deleting/model_tp00_pp000.safetensors");
  fs::create_directories(dir / ".iter_1.deleting");  // not ours
  touch("notes.tmp.1");
  save_value(dir.string(), ck::Step::at(5), 2.0f);
  CHECK_FALSE(has_entry(dir, "latest_checkpointed_iteration.txt.tmp." + std::to_string(gone)));
  CHECK(has_entry(dir, "latest_checkpointed_iteration.txt.tmp." + std::to_string(::getppid())));
  CHECK_FALSE(has_entry(dir, ".iter_0000003.tmp"));
  CHECK_FALSE(has_entry(dir, ".iter_0000002.old"));
  CHECK(has_entry(dir, ".iter_0000003.tmpx"));
  CHECK(has_entry(dir, "iter_3.tmp"));
  CHECK_FALSE(has_entry(dir, ".iter_0000001.deleting"));
  CHECK(has_entry(dir, ".iter_1.deleting"));
  CHECK(has_entry(dir, "notes.tmp.1"));
  CHECK(load_value(dir.string()) == 2.0f);
  kFaultScratch.remove();
}
