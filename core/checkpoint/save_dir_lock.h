// One run per save directory: two runs saving into one directory remove each other's temporaries as stale and
// replace each other's checkpoints. A run holds <dir>/.gptrain-save.lock, flock()ed for its lifetime, holding
// "<host> <pid>" of its holder so that a refusal can name it. The kernel drops the flock of a process that dies,
// so a lock file left by a killed run is taken over (with a line naming the run that left it).
#pragma once

#include <string>

namespace gptrain::checkpoint {

inline constexpr const char* kSaveLockName = ".gptrain-save.lock";

class SaveDirLock {
 public:
  // Takes the lock of `dir` (created if missing). An Error naming `flag`, `dir` and the holder (host, pid) when
  // another process holds it.
  SaveDirLock(const std::string& flag, const std::string& dir);
  ~SaveDirLock();  // removes the lock file, then releases the lock
  SaveDirLock(SaveDirLock&& o) noexcept;
  SaveDirLock& operator=(SaveDirLock&&) = delete;
  SaveDirLock(const SaveDirLock&) = delete;
  SaveDirLock& operator=(const SaveDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace gptrain::checkpoint
