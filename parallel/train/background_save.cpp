#include "parallel/train/background_save.h"

namespace gptrain::parallel {

BackgroundSave::BackgroundSave(std::shared_ptr<SaveSnapshot> snap) : snap_(std::move(snap)) {
  thread_ = std::thread([this] {
    try {
      write_snapshot_files(*snap_);
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    done_.store(true, std::memory_order_release);
  });
}

BackgroundSave::~BackgroundSave() {
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> BackgroundSave::wait() {
  if (thread_.joinable()) thread_.join();
  return error_;
}

}  // namespace gptrain::parallel
