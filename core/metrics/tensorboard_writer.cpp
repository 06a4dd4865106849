#include "core/metrics/tensorboard_writer.h"

#include "core/common/error.h"
#include "core/metrics/tfevent.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace gptrain::metrics {
namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  check(!ec, "--tensorboard-dir {}: cannot create the directory: {}", log_dir, ec.message());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  const double t = now_seconds();
  const auto stem =
      fmt::format("events.out.tfevents.{:010d}.{}.{}.", static_cast<int64_t>(t), host, static_cast<long>(getpid()));
  int fd = -1;
  for (int n = 0; fd < 0; ++n) {
    path_ = (std::filesystem::path(log_dir) / (stem + std::to_string(n))).string();
    fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != EEXIST || n > 10000)) {
      fail("--tensorboard-dir {}: cannot create {}: {}", log_dir, path_, std::strerror(errno));
    }
  }
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    ::close(fd);
    fail("{}: fdopen failed: {}", path_, std::strerror(errno));
  }
  write_record(tfevent::encode_file_version_event(t));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, int64_t step, double value) {
  write_record(tfevent::encode_scalar_event(now_seconds(), step, tag, static_cast<float>(value)));
}

void TensorBoardWriter::write_record(const std::string& event) {
  const std::string record = tfevent::frame_record(event);
  // errno is read after the call: check()'s arguments are evaluated in no set order.
  const bool ok = std::fwrite(record.data(), 1, record.size(), file_) == record.size();
  const int e = errno;
  check(ok, "{}: write failed: {}", path_, std::strerror(e));
}

void TensorBoardWriter::flush() {
  const bool ok = std::fflush(file_) == 0;
  const int e = errno;
  check(ok, "{}: flush failed: {}", path_, std::strerror(e));
}

}  // namespace gptrain::metrics
