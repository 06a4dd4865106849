// Byte sources (plain, gzip via zlib, zstd streaming) and the line splitter.
#include "data/jsonl/line_reader.h"

#include "core/common/error.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

namespace gptrain {

namespace {

class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail("{}: cannot open input: {}", path, std::strerror(errno));
  }
  ~FileSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t read(char* buf, size_t n) override {
    while (true) {
      const ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) {
        consumed_ += static_cast<uint64_t>(r);
        return static_cast<size_t>(r);
      }
      if (errno != EINTR) fail("{}: read error: {}", path_, std::strerror(errno));
    }
  }
  uint64_t file_bytes_consumed() const override { return consumed_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t consumed_ = 0;
};

// gzip through zlib's inflate (with multi-member support: concatenated .gz files are valid gzip).
class GzipSource : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) : file_(path), path_(path), in_(1 << 18) {
    std::memset(&z_, 0, sizeof(z_));
    if (inflateInit2(&z_, 15 + 32) != Z_OK) fail("{}: cannot initialise zlib", path);
  }
  ~GzipSource() override { inflateEnd(&z_); }
  size_t read(char* buf, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n) {
      if (z_.avail_in == 0) {
        if (in_eof_) {
          if (in_stream_) fail("{}: truncated gzip stream (unexpected end of file)", path_);
          break;
        }
        const size_t got = file_.read(in_.data(), in_.size());
        if (got == 0) {
          in_eof_ = true;
          continue;
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(got);
      }
      in_stream_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_stream_ = false;
        inflateReset(&z_);  // another gzip member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail("{}: corrupt gzip data ({})", path_, z_.msg ? z_.msg : "inflate failed");
      }
    }
    return n - z_.avail_out;
  }
  uint64_t file_bytes_consumed() const override { return file_.file_bytes_consumed() - z_.avail_in; }

 private:
  FileSource file_;
  std::string path_;
  std::vector<char> in_;
  z_stream z_;
  bool in_eof_ = false;
  bool in_stream_ = false;
};

class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(const std::string& path) : file_(path), path_(path), in_(ZSTD_DStreamInSize()) {
    ds_ = ZSTD_createDStream();
    if (!ds_) fail("{}: cannot create a zstd stream", path);
    ZSTD_initDStream(ds_);
  }
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }
  size_t read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size && !output_full_) {
        const size_t got = file_.read(in_.data(), in_.size());
        if (got == 0) {
          if (frame_open_) fail("{}: truncated zstd stream (unexpected end of file)", path_);
          break;
        }
        input_ = ZSTD_inBuffer{in_.data(), got, 0};
      }
      const size_t rc = ZSTD_decompressStream(ds_, &out, &input_);
      if (ZSTD_isError(rc)) fail("{}: corrupt zstd data ({})", path_, ZSTD_getErrorName(rc));
      frame_open_ = rc != 0;
      output_full_ = out.pos == out.size;  // the decoder may hold more output: flush before reading
    }
    return out.pos;
  }
  uint64_t file_bytes_consumed() const override { return file_.file_bytes_consumed() - (input_.size - input_.pos); }

 private:
  FileSource file_;
  std::string path_;
  std::vector<char> in_;
  ZSTD_DStream* ds_ = nullptr;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool frame_open_ = false;
  bool output_full_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  if (path.ends_with(".gz")) return std::make_unique<GzipSource>(path);
  if (path.ends_with(".zst") || path.ends_with(".zstd")) return std::make_unique<ZstdSource>(path);
  return std::make_unique<FileSource>(path);
}

LineReader::LineReader(const std::string& path) : path_(path), source_(open_byte_source(path)), buf_(1 << 20) {}

bool LineReader::next(std::string_view& line) {
  size_t scan = begin_;
  while (true) {
    if (const void* nl = std::memchr(buf_.data() + scan, '\n', end_ - scan)) {
      const size_t e = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
      size_t len = e - begin_;
      if (len && buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      begin_ = e + 1;
      ++line_no_;
      return true;
    }
    scan = end_;
    if (eof_) {
      if (begin_ == end_) return false;
      size_t len = end_ - begin_;
      if (buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      begin_ = end_;
      ++line_no_;
      return true;
    }
    // Make room: move the partial line to the front, grow when one line fills the buffer.
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      scan -= begin_;
      begin_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    const size_t got = source_->read(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) eof_ = true;
    end_ += got;
  }
}

}  // namespace gptrain
