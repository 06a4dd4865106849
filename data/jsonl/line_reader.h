// Reads a JSON-lines input one line at a time, streaming: plain (.jsonl, .json), gzip (.gz) or zstd
// (.zst), chosen by the file name's last extension. Memory is one read buffer plus the longest line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

// A stream of decompressed bytes.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into buf; returns 0 only at the end. Throws gptrain::Error on a read or
  // decompression error (naming the file).
  virtual size_t read(char* buf, size_t n) = 0;
  // Bytes of the underlying file consumed so far (compressed bytes for .gz/.zst), for progress.
  virtual uint64_t file_bytes_consumed() const = 0;
};

// Opens path with the decompressor its extension asks for (.gz, .zst, anything else plain).
std::unique_ptr<ByteSource> open_byte_source(const std::string& path);

class LineReader {
 public:
  explicit LineReader(const std::string& path);
  // The next line without its "\n" (and without a "\r" before it); false at the end. The view stays
  // valid until the next call. The last line needs no final newline.
  bool next(std::string_view& line);
  // 1-based number of the line last returned.
  int64_t line_number() const { return line_no_; }
  uint64_t file_bytes_consumed() const { return source_->file_bytes_consumed(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<ByteSource> source_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  bool eof_ = false;
  int64_t line_no_ = 0;
};

}  // namespace gptrain
