#include "core/checkpoint/save_dir_lock.h"

#include "core/common/error.h"
#include "core/common/log.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

namespace gptrain::checkpoint {

namespace {

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

std::string read_all(int fd) {
  std::string text;
  char buf[256];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof(buf), at)) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return text;
}

struct Holder {
  std::string host;
  long pid = 0;
};

// "<host> <pid>" as the holder wrote it; nullopt for an empty or foreign file.
std::optional<Holder> parse_holder(const std::string& text) {
  std::istringstream in(text);
  Holder h;
  if (!(in >> h.host >> h.pid) || h.pid <= 0) return std::nullopt;
  return h;
}

std::string describe(const std::optional<Holder>& h) {
  if (!h) return "a process that has not written its host and pid yet";
  return fmt::format("host {}, pid {}", h->host, h->pid);
}

// The path still names the open file: a holder that finished unlinks it before releasing the lock, and a lock
// on an unlinked file guards nothing.
bool still_linked(int fd, const std::string& path) {
  struct stat open_file = {};
  struct stat named = {};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

}  // namespace

SaveDirLock::SaveDirLock(const std::string& flag, const std::string& dir)
    : path_((std::filesystem::path(dir) / kSaveLockName).string()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("{} {}: cannot create directory: {}", flag, dir, ec.message());
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) fail("{} {}: cannot create the lock file {}: {}", flag, dir, path_, std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = describe(parse_holder(read_all(fd)));
      ::close(fd);
      if (err == EWOULDBLOCK)
        fail(
            "{} {}: another run is saving into this directory ({}; lock file {}); two runs in one save directory "
            "delete each other's temporaries and replace each other's checkpoints: wait for it to end or give {} "
            "another directory",
            flag, dir, holder, path_, flag);
      fail("{} {}: cannot lock {}: {}", flag, dir, path_, std::strerror(err));
    }
    if (!still_linked(fd, path_)) {
      ::close(fd);
      if (attempt < 8) continue;
      fail("{} {}: cannot lock {}: the file keeps being removed under this run", flag, dir, path_);
    }
    fd_ = fd;
    break;
  }
  const std::string before = read_all(fd_);
  if (!before.empty()) {  // the flock was free: whoever wrote this ended without removing it
    const std::optional<Holder> h = parse_holder(before);
    const std::string host = host_name();
    std::string state = "another host";
    if (h && h->host == host)
      state =
          ::kill(static_cast<pid_t>(h->pid), 0) != 0 && errno == ESRCH ? "no longer running" : "not holding the lock";
    log::warn("{} {}: took over the stale lock of a run that ended without releasing it ({}; {})", flag, dir,
              describe(h), state);
  }
  const std::string me = fmt::format("{} {}\n", host_name(), static_cast<long>(::getpid()));
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
    log::warn("{}: cannot write this run's host and pid into the lock file: {}", path_, std::strerror(errno));
  ::fsync(fd_);
}

SaveDirLock::SaveDirLock(SaveDirLock&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}

SaveDirLock::~SaveDirLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // before the lock goes: a waiting opener sees the file gone and retries
  ::close(fd_);
}

}  // namespace gptrain::checkpoint
