// After a save that was killed or failed: restore a re-saved step's previous directory, list the intact
// checkpoints for error messages, and remove gptrain's own stale temporaries (nothing else).
#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"
#include "core/common/log.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>

namespace gptrain::checkpoint {

namespace fs = std::filesystem;

namespace {
const std::regex kStepDir(R"(iter_\d{7}|release)");
const std::regex kTempDir(R"(\.(iter_\d{7}|release)\.tmp)");
const std::regex kOldDir(R"(\.(iter_\d{7}|release)\.old)");
// An older iteration that retention renamed to delete it, left by a kill during the deletion.
const std::regex kDeletingDir(R"(\.iter_\d{7,}\.deleting)");
const std::regex kTrackerTemp(R"(latest_checkpointed_iteration\.txt\.tmp\.(\d{1,10}))");

bool process_gone(long pid) { return pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }
}  // namespace

bool restore_interrupted_save(const std::string& save_dir, Step step) {
  const fs::path final_dir = fs::path(save_dir) / step.dir_name();
  const fs::path old = fs::path(save_dir) / fmt::format(".{}.old", step.dir_name());
  std::error_code ec;
  if (fs::exists(final_dir, ec) || !fs::exists(old / "metadata.json", ec)) return false;
  fs::rename(old, final_dir, ec);
  if (ec) return false;
  log::warn("{}: restored from {} (a save of the same step was interrupted)", final_dir.string(), old.string());
  return true;
}

std::vector<std::string> intact_checkpoints(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const bool candidate =
        std::regex_match(n, kStepDir) || std::regex_match(n, kOldDir) || std::regex_match(n, kTempDir);
    if (candidate && fs::exists(e.path() / "metadata.json", ec)) found.push_back(n);
  }
  std::sort(found.begin(), found.end());
  return found;
}

void remove_stale_temporaries(const std::string& save_dir) {
  std::error_code ec;
  std::vector<fs::path> stale, deleting;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string n = e.path().filename().string();
    std::smatch m;
    if (std::regex_match(n, kDeletingDir) && e.is_directory(ec)) {
      deleting.push_back(e.path());
    } else if (std::regex_match(n, kTempDir) && e.is_directory(ec)) {
      stale.push_back(e.path());
    } else if (std::regex_match(n, m, kOldDir) && e.is_directory(ec)) {
      // The previous copy of a re-saved step: stale once the new copy is in place.
      if (fs::exists(fs::path(save_dir) / m[1].str() / "metadata.json", ec)) stale.push_back(e.path());
    } else if (std::regex_match(n, m, kTrackerTemp) && e.is_regular_file(ec)) {
      if (process_gone(std::stol(m[1].str()))) stale.push_back(e.path());
    }
  }
  for (const auto& p : stale) {
    fs::remove_all(p, ec);
    if (!ec) log::info("{}: removed a stale temporary of an earlier save", p.string());
  }
  for (const auto& p : deleting) {
    fs::remove_all(p, ec);
    if (!ec) log::info("{}: removed the rest of an older checkpoint whose deletion was interrupted", p.string());
  }
}

std::string training_checkpoint_contents(const std::string& dir) {
  std::vector<std::string> parts;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (std::regex_match(e.path().filename().string(), kStepDir) && e.is_directory(ec))
      parts.push_back(e.path().filename().string());
  std::sort(parts.begin(), parts.end());
  if (fs::exists(fs::path(dir) / "latest_checkpointed_iteration.txt", ec)) {
    std::string tracker = "the tracker latest_checkpointed_iteration.txt";
    try {
      if (const auto step = read_tracker(dir)) tracker += fmt::format(" (naming {})", step->tracker_text());
    } catch (const Error&) {
    }
    parts.insert(parts.begin(), tracker);
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

void refuse_to_replace(const std::string& flag, const std::string& dir, const std::string& holds,
                       const std::string& hint) {
  fail("{} {}: {}; refusing to replace it{}", flag, dir, holds, hint);
}

}  // namespace gptrain::checkpoint
