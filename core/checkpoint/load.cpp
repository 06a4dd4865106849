// Loading: open every tensor file of a checkpoint directory, index each global name to the pieces
// that hold it, and reassemble / reslice on read.
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/integrity.h"
#include "core/common/error.h"
#include "core/safetensors/reader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

namespace gptrain::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<Step> read_tracker(const std::string& load_dir) {
  const std::string path = (fs::path(load_dir) / "latest_checkpointed_iteration.txt").string();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return std::nullopt;
  check(fs::is_regular_file(st), "{}: not a regular file (the tracker holds the latest iteration number)", path);
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  check(!f.bad(), "{}: cannot read", path);
  const auto b = text.find_first_not_of(" \t\r\n");
  const auto e = text.find_last_not_of(" \t\r\n");
  text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  if (text == "release") return Step::release_step();
  // Eighteen digits always fit an int64 (and any real iteration count); longer text is damage.
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail("{}: expected an iteration number (up to 18 digits) or \"release\", got \"{}\"", path,
         text.size() > 64 ? text.substr(0, 64) + "..." : text);
  return Step::at(std::stoll(text));
}

struct Piece {
  const safetensors::Reader* reader;
  std::optional<Slice> slice;
  std::optional<uint32_t> crc;  // absent in files written before checksums
  std::size_t file = 0;         // index of its reader (verify()'s share of the files)
  mutable bool verified = false;
};

struct Checkpoint::Impl {
  std::vector<std::unique_ptr<safetensors::Reader>> readers;
  std::map<std::string, std::vector<Piece>> pieces[2];  // by Kind

  // A piece's bytes against their checksum, once per piece (verify() and the reads share the verdicts).
  static std::optional<std::string> damage(const Piece& p, const std::string& name) {
    if (p.verified || !p.crc) return std::nullopt;
    auto d = check_tensor(*p.reader, name, *p.crc);
    p.verified = !d;
    return d;
  }
  // Before a piece's bytes are used.
  static void check(const Piece& p, const std::string& name) {
    if (const auto d = damage(p, name)) fail("{}", *d);
  }

  const std::vector<Piece>& find(Kind k, const std::string& name, const std::string& dir) const {
    auto it = pieces[static_cast<int>(k)].find(name);
    if (it == pieces[static_cast<int>(k)].end())
      fail("{}: the checkpoint has no {} tensor \"{}\"", dir, k == Kind::model ? "model" : "optimizer", name);
    return it->second;
  }
};

namespace {
Slice parse_slice(const std::string& text, const std::string& where) {
  Slice s;
  try {
    const json j = json::parse(text);
    s.global_shape = j.at("global_shape").get<std::vector<int64_t>>();
    for (const auto& b : j.at("blocks")) {
      if (!b.is_array() || b.size() != 3) fail("{}: each block must be [dim, offset, length]", where);
      s.blocks.push_back({b[0].get<int>(), b[1].get<int64_t>(), b[2].get<int64_t>()});
    }
  } catch (const json::exception& e) {
    fail("{}: bad slice metadata {}: {}", where, text, e.what());
  }
  try {
    slice_local_shape(s);  // validates the blocks
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  return s;
}
// A stamped file (FileStamp) must be of this directory's checkpoint: its iteration and save.
void check_stamp(const safetensors::Reader& r, const Metadata& meta, const std::string& dir) {
  const auto& md = r.metadata();
  const std::string meta_path = (fs::path(dir) / "metadata.json").string();
  if (const auto it = md.find(kIterationKey); it != md.end()) {
    const std::string& text = it->second;
    int64_t iteration = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), iteration);
    if (ec != std::errc() || end != text.data() + text.size() || iteration < 0)
      fail("{}: \"{}\" in its header is \"{}\", expected an iteration number", r.path(), kIterationKey, text);
    if (iteration != meta.iteration)
      fail("{}: written for iteration {}, but {} is the checkpoint of iteration {} (a file of another checkpoint)",
           r.path(), iteration, meta_path, meta.iteration);
  }
  if (const auto it = md.find(kSaveIdKey); it != md.end() && !meta.save_id.empty() && it->second != meta.save_id)
    fail(
        "{}: written by another save (save id {}; {} says {}): a file of another run's checkpoint of iteration {}, "
        "or of an earlier save of it",
        r.path(), it->second, meta_path, meta.save_id, meta.iteration);
}
}  // namespace

Checkpoint Checkpoint::open(const std::string& load_dir, std::optional<Step> step) {
  if (!fs::is_directory(load_dir)) fail("--load {}: no such directory", load_dir);
  // A step comes from the tracker (digits only) or from --ckpt-step: a negative one is the flag's.
  if (step && !step->release && step->iteration < 0)
    fail("--ckpt-step must be >= 0 (an iteration number), got {}", step->iteration);
  if (!step) {
    step = read_tracker(load_dir);
    if (!step)
      fail("--load {}: no latest_checkpointed_iteration.txt (not a gptrain checkpoint directory, or no save finished)",
           load_dir);
  }
  const fs::path dir = fs::path(load_dir) / step->dir_name();
  if (!fs::is_directory(dir)) restore_interrupted_save(load_dir, *step);
  if (!fs::is_directory(dir)) {
    const auto intact = intact_checkpoints(load_dir);
    fail("--load {}: no checkpoint for step {} (expected directory {}); {}", load_dir, step->tracker_text(),
         dir.string(),
         intact.empty() ? std::string("no intact checkpoint directory there")
                        : fmt::format("intact checkpoint directories there: {}", fmt::join(intact, ", ")));
  }
  return Checkpoint(dir.string());
}

Checkpoint::Checkpoint(const std::string& checkpoint_dir) : dir_(checkpoint_dir), meta_(read_metadata(checkpoint_dir)) {
  auto impl = std::make_unique<Impl>();
  static const std::regex model_re(R"(model_tp(\d{2})_pp(\d{3})(_ep\d{3})?\.safetensors)");
  static const std::regex optim_re(R"(optim_tp(\d{2})_pp(\d{3})_dp(\d{3})(_ep\d{3})?\.safetensors)");
  std::vector<std::pair<Kind, std::string>> files;
  for (const auto& e : fs::directory_iterator(checkpoint_dir)) {
    const std::string n = e.path().filename().string();
    if (std::regex_match(n, model_re))
      files.emplace_back(Kind::model, n);
    else if (std::regex_match(n, optim_re))
      files.emplace_back(Kind::optim, n);
  }
  std::sort(files.begin(), files.end());
  for (int t = 0; t < meta_.layout.tp; ++t)
    for (int p = 0; p < meta_.layout.pp; ++p)
      for (int e = 0; e < meta_.layout.ep; ++e) {
        const std::string want = model_file_name(t, p, e);
        if (std::find(files.begin(), files.end(), std::make_pair(Kind::model, want)) == files.end())
          fail("{}: metadata.json says tp {} x pp {} x ep {} but {} is missing", checkpoint_dir, meta_.layout.tp,
               meta_.layout.pp, meta_.layout.ep, want);
      }
  for (const auto& [kind, name] : files) {
    impl->readers.push_back(std::make_unique<safetensors::Reader>((fs::path(checkpoint_dir) / name).string()));
    const auto& r = *impl->readers.back();
    check_stamp(r, meta_, checkpoint_dir);
    const auto crcs = recorded_checksums(r);
    for (const auto& t : r.tensors()) {
      Piece piece{&r, std::nullopt, crcs ? std::optional(crcs->at(t.name)) : std::nullopt, impl->readers.size() - 1};
      if (auto m = r.metadata().find(t.name); m != r.metadata().end()) {
        piece.slice = parse_slice(m->second, r.path() + ": tensor \"" + t.name + "\"");
        if (slice_local_shape(*piece.slice) != t.shape)
          fail("{}: tensor \"{}\" of shape {} does not match the shape its slice metadata describes", r.path(), t.name,
               safetensors::shape_string(t.shape));
      }
      if (t.dtype != safetensors::DType::F32)
        fail("{}: tensor \"{}\" is {}, checkpoints hold F32", r.path(), t.name, safetensors::dtype_name(t.dtype));
      impl->pieces[static_cast<int>(kind)][t.name].push_back(std::move(piece));
    }
  }
  impl_ = impl.release();
}

Checkpoint::~Checkpoint() { delete impl_; }
Checkpoint::Checkpoint(Checkpoint&& o) noexcept
    : dir_(std::move(o.dir_)), meta_(std::move(o.meta_)), impl_(std::exchange(o.impl_, nullptr)) {}
Checkpoint& Checkpoint::operator=(Checkpoint&& o) noexcept {
  if (this != &o) {
    delete impl_;
    dir_ = std::move(o.dir_);
    meta_ = std::move(o.meta_);
    impl_ = std::exchange(o.impl_, nullptr);
  }
  return *this;
}

bool Checkpoint::has_optim() const { return !impl_->pieces[static_cast<int>(Kind::optim)].empty(); }

std::optional<std::string> Checkpoint::missing_optimizer_files() const {
  if (!meta_.optimizer_state.value_or(false)) return std::nullopt;
  // DP rank 0 of each TP x PP (x EP) rank writes its optimizer file, gathered over the DP ranks.
  std::vector<std::string> missing;
  for (int t = 0; t < meta_.layout.tp; ++t)
    for (int p = 0; p < meta_.layout.pp; ++p)
      for (int e = 0; e < meta_.layout.ep; ++e)
        if (const std::string f = optim_file_name(t, p, 0, e); !fs::exists(fs::path(dir_) / f)) missing.push_back(f);
  if (missing.empty()) return std::nullopt;
  return fmt::format("{} is missing{} (metadata.json records that the save wrote optimizer state)",
                     (fs::path(dir_) / missing.front()).string(),
                     missing.size() > 1 ? fmt::format(", and {} more optimizer file(s)", missing.size() - 1) : "");
}

std::vector<std::string> Checkpoint::names(Kind kind) const {
  std::vector<std::string> v;
  for (const auto& [n, p] : impl_->pieces[static_cast<int>(kind)]) v.push_back(n);
  return v;
}

bool Checkpoint::has(Kind kind, const std::string& name) const {
  return impl_->pieces[static_cast<int>(kind)].count(name) != 0;
}

std::vector<int64_t> Checkpoint::global_shape(Kind kind, const std::string& name) const {
  const auto& ps = impl_->find(kind, name, dir_);
  for (const auto& p : ps)
    if (!p.slice) return p.reader->info(name).shape;
  return ps.front().slice->global_shape;
}

void Checkpoint::read_global(Kind kind, const std::string& name, float* dst, std::size_t n) const {
  const auto& ps = impl_->find(kind, name, dir_);
  const auto shape = global_shape(kind, name);
  if (static_cast<std::size_t>(numel(shape)) != n)
    fail("{}: tensor \"{}\" has global shape {} ({} elements), the caller expected {}", dir_, name,
         safetensors::shape_string(shape), numel(shape), n);
  for (const auto& p : ps)
    if (!p.slice) {
      Impl::check(p, name);
      p.reader->read_f32(name, dst, n);
      return;
    }
  // Reassemble from slices; track coverage so a missing rank file is an error, not zeros.
  std::vector<bool> covered(n, false);
  std::vector<float> local, ones, mark(n);
  for (const auto& p : ps) {
    if (p.slice->global_shape != shape)
      fail("{}: tensor \"{}\" pieces disagree on the global shape ({} vs {})", p.reader->path(), name,
           safetensors::shape_string(p.slice->global_shape), safetensors::shape_string(shape));
    Impl::check(p, name);
    local = p.reader->read_f32(name);
    insert_slice(dst, *p.slice, local.data());
    ones.assign(local.size(), 1.0f);
    std::fill(mark.begin(), mark.end(), 0.0f);
    insert_slice(mark.data(), *p.slice, ones.data());
    for (std::size_t i = 0; i < n; ++i)
      if (mark[i] != 0.0f) covered[i] = true;
  }
  const auto missing = std::count(covered.begin(), covered.end(), false);
  if (missing > 0)
    fail("{}: tensor \"{}\" is incomplete: its pieces cover {} of {} elements (a rank's file is missing?)", dir_, name,
         static_cast<int64_t>(n) - missing, n);
}

std::vector<float> Checkpoint::read_global(Kind kind, const std::string& name) const {
  std::vector<float> v(static_cast<std::size_t>(numel(global_shape(kind, name))));
  read_global(kind, name, v.data(), v.size());
  return v;
}

void Checkpoint::read_into(Kind kind, const NamedTensor& t, int64_t valid_rows) const {
  const auto gshape = global_shape(kind, t.name);
  const auto want = t.slice ? t.slice->global_shape : t.shape;
  if (valid_rows >= 0 && !gshape.empty() && want.size() == gshape.size() && gshape[0] != want[0] &&
      std::equal(gshape.begin() + 1, gshape.end(), want.begin() + 1)) {
    if (gshape[0] < valid_rows || want[0] < valid_rows)
      fail(
          "{}: tensor \"{}\" has {} rows in the checkpoint and {} in the model; both must hold the {} real vocabulary "
          "rows",
          dir_, t.name, gshape[0], want[0], valid_rows);
    // Re-pad: real rows from the checkpoint, zero padding, then the caller's slice.
    const auto saved = read_global(kind, t.name);
    const int64_t row = numel(gshape) / gshape[0];
    std::vector<float> full(static_cast<std::size_t>(numel(want)), 0.0f);
    std::copy_n(saved.begin(), valid_rows * row, full.begin());
    if (!t.slice) {
      std::copy(full.begin(), full.end(), t.data);
    } else {
      if (slice_local_shape(*t.slice) != t.shape)
        fail("checkpoint load: tensor \"{}\": local shape {} does not match its slice", t.name,
             safetensors::shape_string(t.shape));
      extract_slice(full.data(), *t.slice, t.data);
    }
    return;
  }
  if (!t.slice) {
    if (gshape != t.shape)
      fail("{}: tensor \"{}\" has shape {} in the checkpoint but the model expects {}", dir_, t.name,
           safetensors::shape_string(gshape), safetensors::shape_string(t.shape));
    read_global(kind, t.name, t.data, static_cast<std::size_t>(numel(t.shape)));
    return;
  }
  if (t.slice->global_shape != gshape)
    fail("{}: tensor \"{}\" has global shape {} in the checkpoint but the model expects {}", dir_, t.name,
         safetensors::shape_string(gshape), safetensors::shape_string(t.slice->global_shape));
  if (slice_local_shape(*t.slice) != t.shape)
    fail("checkpoint load: tensor \"{}\": local shape {} does not match its slice", t.name,
         safetensors::shape_string(t.shape));
  // Same layout as saved: read the piece directly.
  for (const auto& p : impl_->find(kind, t.name, dir_)) {
    if (p.slice && p.slice->blocks.size() == t.slice->blocks.size() &&
        std::equal(p.slice->blocks.begin(), p.slice->blocks.end(), t.slice->blocks.begin(),
                   [](const Block& a, const Block& b) {
                     return a.dim == b.dim && a.offset == b.offset && a.length == b.length;
                   })) {
      Impl::check(p, t.name);
      p.reader->read_f32(t.name, t.data, static_cast<std::size_t>(numel(t.shape)));
      return;
    }
  }
  const auto full = read_global(kind, t.name);
  extract_slice(full.data(), *t.slice, t.data);
}

void Checkpoint::load(Kind kind, std::span<const NamedTensor> tensors, bool strict) const {
  std::vector<std::string> missing;
  for (const auto& t : tensors)
    if (!has(kind, t.name)) missing.push_back(t.name);
  const char* what = kind == Kind::model ? "model" : "optimizer";
  if (!missing.empty())
    fail("{}: the checkpoint lacks {} {} tensor(s) the run needs: {} (different model shape or family?)", dir_,
         missing.size(), what,
         fmt::format("{}",
                     fmt::join(missing.begin(), missing.begin() + std::min<std::size_t>(missing.size(), 8), ", ")));
  if (strict) {
    std::vector<std::string> extra;
    for (const auto& n : names(kind)) {
      bool wanted = false;
      for (const auto& t : tensors) wanted = wanted || t.name == n;
      if (!wanted) extra.push_back(n);
    }
    if (!extra.empty())
      fail("{}: the checkpoint holds {} {} tensor(s) the run does not have: {} (different model shape or family?)",
           dir_, extra.size(), what,
           fmt::format("{}", fmt::join(extra.begin(), extra.begin() + std::min<std::size_t>(extra.size(), 8), ", ")));
  }
  for (const auto& t : tensors) read_into(kind, t);
}

std::optional<std::string> Checkpoint::verify(int part, int parts) const {
  for (const auto& by_name : impl_->pieces)
    for (const auto& [name, ps] : by_name)
      for (const Piece& p : ps) {
        if (parts > 1 && static_cast<int>(p.file % static_cast<std::size_t>(parts)) != part) continue;
        if (auto d = Impl::damage(p, name)) return d;
      }
  return std::nullopt;
}

}  // namespace gptrain::checkpoint
