#include "core/checkpoint/fp8_state_json.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/fp8_scaling.h"

#include <cmath>
#include <limits>
#include <string>

namespace gptrain::checkpoint {

namespace {

nlohmann::json number(float v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

bool read_number(const nlohmann::json& j, float& out) {
  if (j.is_number()) return out = j.get<float>(), true;
  if (!j.is_string()) return false;
  const std::string s = j.get<std::string>();
  if (s == "inf") return out = std::numeric_limits<float>::infinity(), true;
  if (s == "-inf") return out = -std::numeric_limits<float>::infinity(), true;
  if (s == "nan") return out = std::numeric_limits<float>::quiet_NaN(), true;
  return false;
}

}  // namespace

nlohmann::json fp8_state_to_json(const std::vector<float>& state, const StageConfig& c) {
  const Fp8Config& f = c.fp8;
  nlohmann::json layers = nlohmann::json::object();
  const std::size_t per_layer = std::size_t(kFp8TensorsPerLayer) * fp8_state_stride(f);
  for (int l = 0; l < c.num_layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t i = 0; i < per_layer; ++i) row.push_back(number(state[std::size_t(l) * per_layer + i]));
    layers[std::to_string(l)] = std::move(row);
  }
  return {{"format", f.hybrid ? "hybrid" : "e4m3"},
          {"recipe", fp8_recipe_name(f.recipe)},
          {"margin", f.margin},
          {"amax_history_len", f.amax_history_len},
          {"amax_compute_algo", f.amax_max ? "max" : "most_recent"},
          {"wgrad", f.wgrad},
          {"state", std::move(layers)}};
}

std::vector<float> read_fp8_state(const Checkpoint& ck, const StageConfig& c) {
  const nlohmann::json& saved = ck.metadata().fp8;
  const bool has = saved.is_object() && saved.contains("state");
  if (!c.fp8.delayed()) {
    if (has)
      log::info("{}: the checkpoint's FP8 scaling state is not used (this run has no delayed FP8 scaling)", ck.dir());
    return {};
  }
  std::vector<float> state = fp8_initial_state(c.num_layers, c.fp8);
  if (!has) {
    log::info("{}: the checkpoint has no FP8 scaling state; the amax histories start empty and the scales at 1",
              ck.dir());
    return state;
  }
  const int L = c.fp8.amax_history_len;
  const nlohmann::json& len = saved.value("amax_history_len", nlohmann::json());
  check(len.is_number_integer(), "{}/metadata.json: fp8.amax_history_len must be an integer", ck.dir());
  check(len.get<int>() == L,
        "--fp8-amax-history-len {}: the checkpoint's amax histories hold {} steps; give --fp8-amax-history-len {} "
        "to resume them",
        L, len.get<int>(), len.get<int>());
  const std::size_t per_layer = std::size_t(kFp8TensorsPerLayer) * fp8_state_stride(c.fp8);
  const nlohmann::json& layers = saved.at("state");
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string key = std::to_string(l);
    bool ok =
        layers.is_object() && layers.contains(key) && layers.at(key).is_array() && layers.at(key).size() == per_layer;
    for (std::size_t i = 0; ok && i < per_layer; ++i)
      ok = read_number(layers.at(key)[i], state[std::size_t(l) * per_layer + i]);
    if (!ok)
      fail(
          "{}/metadata.json: fp8.state.\"{}\" must be a list of {} numbers (layer {}'s {} FP8 tensors, each {} "
          "amaxes, scale, scale_inv)",
          ck.dir(), key, per_layer, l, kFp8TensorsPerLayer, L);
  }
  return state;
}

}  // namespace gptrain::checkpoint
