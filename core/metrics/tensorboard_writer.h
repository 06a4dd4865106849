// TensorBoard scalar writer for --tensorboard-dir: one event file per writer,
// <dir>/events.out.tfevents.<unix time %010d>.<hostname>.<pid>.<n> (the name torch's SummaryWriter
// uses; n is the first number not already taken in the directory). Records go through stdio
// buffering; flush() makes everything written so far visible to TensorBoard. Only the rank that
// logs (Megatron: the last rank) should create one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gptrain::metrics {

class TensorBoardWriter {
 public:
  // Creates `log_dir` (and parents) and the event file, and writes the file-version record.
  explicit TensorBoardWriter(const std::string& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One scalar at `step` (stored as float32, TensorBoard's simple_value), stamped with the wall time.
  void add_scalar(const std::string& tag, int64_t step, double value);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace gptrain::metrics
