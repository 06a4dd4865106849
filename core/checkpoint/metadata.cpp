// metadata.json of a checkpoint, and the file names inside a checkpoint directory.
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/integrity.h"
#include "core/common/error.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>

namespace gptrain::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "gptrain-checkpoint";
constexpr int kVersion = 1;

std::string Step::dir_name() const { return release ? "release" : fmt::format("iter_{:07d}", iteration); }
std::string Step::tracker_text() const { return release ? "release" : std::to_string(iteration); }

namespace {
std::string ep_suffix(int ep) { return ep > 0 ? fmt::format("_ep{:03d}", ep) : std::string(); }
}  // namespace

std::string model_file_name(int tp, int pp, int ep) {
  return fmt::format("model_tp{:02d}_pp{:03d}{}.safetensors", tp, pp, ep_suffix(ep));
}
std::string optim_file_name(int tp, int pp, int dp, int ep) {
  return fmt::format("optim_tp{:02d}_pp{:03d}_dp{:03d}{}.safetensors", tp, pp, dp, ep_suffix(ep));
}

json metadata_to_json(const Metadata& m) {
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["iteration"] = m.iteration;
  j["consumed_train_samples"] = m.consumed_train_samples;
  j["consumed_valid_samples"] = m.consumed_valid_samples;
  if (m.skipped_train_samples > 0) j["skipped_train_samples"] = m.skipped_train_samples;
  j["model"] = m.model;
  j["layout"] = {{"tp", m.layout.tp},
                 {"pp", m.layout.pp},
                 {"dp", m.layout.dp},
                 {"distributed_optimizer", m.layout.distributed_optimizer}};
  if (m.layout.ep > 1) j["layout"]["ep"] = m.layout.ep;
  j["args"] = m.args;
  j["scheduler"] = m.scheduler;
  j["rng"] = m.rng;
  j["loss_scale"] = m.loss_scale;
  if (!m.moe_router.empty()) j["moe_router"] = m.moe_router;
  if (!m.fp8.empty()) j["fp8"] = m.fp8;
  if (m.optimizer_state) j["optimizer_state"] = *m.optimizer_state;
  if (!m.save_id.empty()) j["save_id"] = m.save_id;
  j["num_floating_point_operations_so_far"] = m.num_floating_point_operations_so_far;
  return j;
}

namespace {
template <typename T>
T get_field(const json& j, const char* key, const std::string& where, T fallback, bool required) {
  if (!j.contains(key)) {
    if (required) fail("{}: missing \"{}\"", where, key);
    return fallback;
  }
  const json& v = j.at(key);
  // json's get<int> would read 1.5 as 1, true as 1 and 2^63 as a negative number: a count must be an
  // integer that fits.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<T>::max())) ||
        (!v.is_number_unsigned() &&
         (v.get<int64_t>() < std::numeric_limits<T>::min() || v.get<int64_t>() > std::numeric_limits<T>::max())))
      fail("{}: \"{}\" is {}, expected an integer in [{}, {}]", where, key, v.dump(), std::numeric_limits<T>::min(),
           std::numeric_limits<T>::max());
  }
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    fail("{}: \"{}\" has the wrong type ({})", where, key, v.type_name());
  }
}
}  // namespace

Metadata metadata_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: expected a JSON object", where);
  const auto format = get_field<std::string>(j, "format", where, "", true);
  if (format != kFormat) fail("{}: \"format\" is \"{}\", expected \"{}\"", where, format, kFormat);
  const int version = get_field<int>(j, "version", where, 0, true);
  if (version != kVersion)
    fail("{}: checkpoint format version {} is not supported (this build reads version {})", where, version, kVersion);
  Metadata m;
  m.iteration = get_field<int64_t>(j, "iteration", where, 0, true);
  m.consumed_train_samples = get_field<int64_t>(j, "consumed_train_samples", where, 0, false);
  m.consumed_valid_samples = get_field<int64_t>(j, "consumed_valid_samples", where, 0, false);
  m.skipped_train_samples = get_field<int64_t>(j, "skipped_train_samples", where, 0, false);
  if (m.iteration < 0 || m.consumed_train_samples < 0 || m.consumed_valid_samples < 0)
    fail(
        "{}: iteration and consumed sample counts must be >= 0 (iteration {}, consumed_train_samples {}, "
        "consumed_valid_samples {})",
        where, m.iteration, m.consumed_train_samples, m.consumed_valid_samples);
  m.num_floating_point_operations_so_far =
      get_field<double>(j, "num_floating_point_operations_so_far", where, 0.0, false);
  m.model = j.value("model", json::object());
  if (!m.model.is_object()) fail("{}: \"model\" must be an object", where);
  if (j.contains("layout")) {
    const json& l = j["layout"];
    const std::string w = where + ": layout";
    m.layout.tp = get_field<int>(l, "tp", w, 1, false);
    m.layout.pp = get_field<int>(l, "pp", w, 1, false);
    m.layout.dp = get_field<int>(l, "dp", w, 1, false);
    m.layout.ep = get_field<int>(l, "ep", w, 1, false);
    m.layout.distributed_optimizer = get_field<bool>(l, "distributed_optimizer", w, false, false);
    if (m.layout.tp < 1 || m.layout.pp < 1 || m.layout.dp < 1 || m.layout.ep < 1)
      fail("{}: layout sizes must be >= 1 (tp {}, pp {}, dp {}, ep {})", where, m.layout.tp, m.layout.pp, m.layout.dp,
           m.layout.ep);
  }
  m.args = j.value("args", json::object());
  m.scheduler = j.value("scheduler", json::object());
  m.rng = j.value("rng", json::object());
  m.loss_scale = j.value("loss_scale", json::object());
  m.moe_router = j.value("moe_router", json::object());
  m.fp8 = j.value("fp8", json::object());
  m.save_id = get_field<std::string>(j, "save_id", where, "", false);
  if (j.contains("optimizer_state")) {
    m.optimizer_state = get_field<bool>(j, "optimizer_state", where, false, true);
  } else if (m.args.is_object() && m.args.contains("no_save_optim") && m.args["no_save_optim"].is_boolean()) {
    m.optimizer_state = !m.args["no_save_optim"].get<bool>();  // pretrain_gpt saved optimizer state unless told
  }
  return m;
}

Metadata read_metadata(const std::string& dir) {
  const std::string path = (fs::path(dir) / "metadata.json").string();
  std::ifstream f(path);
  if (!f) fail("{}: cannot open (is {} a gptrain checkpoint directory?)", path, dir);
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
  verify_metadata_checksum(j, path);
  return metadata_from_json(j, path);
}

void write_metadata(const std::string& dir, const Metadata& m) {
  const std::string path = (fs::path(dir) / "metadata.json").string();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    json j = metadata_to_json(m);
    j["crc32c"] = metadata_checksum(j);
    f << j.dump(2) << "\n";
    f.flush();
    if (!f) fail("{}: cannot write", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("{}: cannot rename {} into place", path, tmp);
}

}  // namespace gptrain::checkpoint
