// --async-save: a checkpoint's tensor files written by a background thread from the host copies of a
// SaveSnapshot, while training goes on. Only the writing moves off the training thread: the snapshot
// before it and the commit after it (agreement of the ranks, metadata.json, renames, tracker) stay on the
// training thread, which is the only one that talks to other ranks, so an async checkpoint is exactly as
// atomic as a synchronous one: it appears under its name, complete, or not at all.
#pragma once

#include "parallel/train/distributed_checkpoint.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace gptrain::parallel {

class BackgroundSave {
 public:
  // Starts writing `snap`'s files on a new thread.
  explicit BackgroundSave(std::shared_ptr<SaveSnapshot> snap);
  ~BackgroundSave();  // waits for the thread
  BackgroundSave(const BackgroundSave&) = delete;
  BackgroundSave& operator=(const BackgroundSave&) = delete;

  // The thread has finished (successfully or not); never blocks.
  bool written() const { return done_.load(std::memory_order_acquire); }
  // Waits for the thread; what it threw, if anything.
  std::optional<std::string> wait();
  const SaveSnapshot& snapshot() const { return *snap_; }

 private:
  std::shared_ptr<SaveSnapshot> snap_;
  std::optional<std::string> error_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace gptrain::parallel
