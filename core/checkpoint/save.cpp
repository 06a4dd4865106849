// Saving: tensor files into a temp directory, then one rename, then the tracker.
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/fault_inject.h"
#include "core/common/crc32c.h"
#include "core/common/error.h"
#include "core/safetensors/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gptrain::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
std::string tmp_dir(const std::string& save_dir, Step step) {
  return (fs::path(save_dir) / fmt::format(".{}.tmp", step.dir_name())).string();
}

// Writes `text` to a new file at `path`, fsynced. Returns 0, or the errno of the call that failed (a full disk
// may only show at fsync or close).
int write_synced(const std::string& path, const std::string& text) {
  if (const int injected = tracker_write_fault()) return injected;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return err;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  return ::close(fd) == 0 ? 0 : errno;
}

// After the tracker could not be moved to `step`: that its checkpoint is complete anyway, what the tracker
// names instead, and how to resume from it.
std::string tracker_not_moved(const std::string& save_dir, Step step, const std::string& final_dir) {
  std::optional<Step> tracked;
  try {
    tracked = read_tracker(save_dir);
  } catch (const Error&) {
  }
  if (!tracked)
    return fmt::format(
        "{} is complete, but there is no tracker naming it: --load {} resumes from it (the newest "
        "complete checkpoint there)",
        final_dir, save_dir);
  return fmt::format(
      "{} is complete, but the tracker still names the previous save ({}): resume from it with --load {} {}", final_dir,
      tracked->tracker_text(), save_dir,
      step.release ? std::string("once the tracker names release") : fmt::format("--ckpt-step {}", step.iteration));
}

void fsync_path(const std::string& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

std::string begin_save(const std::string& save_dir, Step step) {
  std::error_code ec;
  fs::create_directories(save_dir, ec);
  if (ec) fail("--save {}: cannot create directory: {}", save_dir, ec.message());
  restore_interrupted_save(save_dir, step);
  remove_stale_temporaries(save_dir);
  const std::string tmp = tmp_dir(save_dir, step);
  fs::remove_all(tmp, ec);
  if (ec) fail("{}: cannot remove a stale temporary checkpoint: {}", tmp, ec.message());
  fs::create_directory(tmp, ec);
  if (ec) fail("{}: cannot create: {}", tmp, ec.message());
  return tmp;
}

namespace {
uint32_t tensor_crc(const NamedTensor& t) {
  // The F32 bytes the file will hold are the host floats as they are (little-endian).
  return crc32c_extend(0, t.data, static_cast<std::size_t>(numel(t.shape)) * 4);
}
}  // namespace

uint32_t files_digest(std::span<const std::pair<std::string, std::span<const NamedTensor>>> files) {
  std::string listing;
  for (const auto& [name, tensors] : files) {
    listing += name + "\n";
    for (const NamedTensor& t : tensors) listing += fmt::format("{} {}\n", t.name, crc32c_hex(tensor_crc(t)));
  }
  return crc32c(listing);
}

std::string save_id_of(std::span<const uint32_t> rank_digests) {
  return crc32c_hex(crc32c_extend(0, rank_digests.data(), rank_digests.size_bytes()));
}

void write_tensor_file(const std::string& path, std::span<const NamedTensor> tensors,
                       const std::optional<FileStamp>& stamp) {
  static_assert(std::endian::native == std::endian::little, "safetensors files are little-endian");
  std::vector<safetensors::HostTensorRef> refs;
  std::map<std::string, std::string> meta;
  json checksums = json::object();
  for (const auto& t : tensors) {
    if (!t.data && numel(t.shape) > 0) fail("{}: tensor \"{}\" has no data pointer", path, t.name);
    checksums[t.name] = crc32c_hex(tensor_crc(t));
    if (t.slice) {
      const auto local = slice_local_shape(*t.slice);
      if (local != t.shape)
        fail("{}: tensor \"{}\" has local shape of {} dims that does not match its slice blocks", path, t.name,
             t.shape.size());
      json blocks = json::array();
      for (const auto& b : t.slice->blocks) blocks.push_back({b.dim, b.offset, b.length});
      meta[t.name] = json{{"global_shape", t.slice->global_shape}, {"blocks", blocks}}.dump();
    }
    refs.push_back({{t.name, safetensors::DType::F32, t.shape}, t.data});
  }
  meta[kChecksumKey] = checksums.dump();
  if (stamp) {
    meta[kIterationKey] = std::to_string(stamp->iteration);
    meta[kSaveIdKey] = stamp->save_id;
  }
  tensor_file_fault_point(path);
  safetensors::write_file(path, refs, std::move(meta));
}

void commit_save(const std::string& save_dir, Step step) {
  const std::string tmp = tmp_dir(save_dir, step);
  const std::string final_dir = (fs::path(save_dir) / step.dir_name()).string();
  if (!fs::exists(fs::path(tmp) / "metadata.json"))
    fail("{}: no metadata.json; refusing to commit an incomplete checkpoint", tmp);
  fsync_path(tmp);
  std::error_code ec;
  std::string old;
  if (fs::exists(final_dir)) {  // re-save of the same step: keep the old one until the new one is in place
    old = (fs::path(save_dir) / fmt::format(".{}.old", step.dir_name())).string();
    fs::remove_all(old, ec);
    commit_rename(final_dir, old, ec);
    if (ec)
      fail("{}: cannot move the previous save aside: {} (it is intact; the new save stays in {})", final_dir,
           ec.message(), tmp);
  }
  commit_rename(tmp, final_dir, ec);
  if (ec) {
    const std::string why = ec.message();
    if (!old.empty()) {  // roll back: the previous save goes back under its name
      std::error_code back;
      fs::rename(old, final_dir, back);
      if (back)
        fail("{}: cannot rename {} into place: {}; nor move the previous save back from {}: {}", final_dir, tmp, why,
             old, back.message());
    }
    fail("{}: cannot rename {} into place: {}{}", final_dir, tmp, why,
         old.empty() ? "" : " (the previous save of this step is back in place)");
  }
  fsync_path(save_dir);
  const std::string tracker = (fs::path(save_dir) / "latest_checkpointed_iteration.txt").string();
  const std::string tracker_tmp = tracker + ".tmp." + std::to_string(::getpid());
  if (const int err = write_synced(tracker_tmp, step.tracker_text())) {
    fs::remove(tracker_tmp, ec);
    fail("{}: cannot write: {}; {}", tracker_tmp, std::strerror(err), tracker_not_moved(save_dir, step, final_dir));
  }
  commit_rename(tracker_tmp, tracker, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tracker_tmp, ec);
    fail("{}: cannot rename into place: {}; {}", tracker, why, tracker_not_moved(save_dir, step, final_dir));
  }
  fsync_path(save_dir);
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace gptrain::checkpoint
