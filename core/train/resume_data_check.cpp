#include "core/train/resume_data_check.h"

#include "data/gpt_dataset/split.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

namespace gptrain {

namespace {

// A recorded list flag (null and [] alike: unset); nullopt when the args do not record it or it is malformed.
std::optional<std::vector<std::string>> saved_list(const nlohmann::json& args, const char* key) {
  if (!args.is_object() || !args.contains(key)) return std::nullopt;
  const nlohmann::json& v = args[key];
  if (v.is_null()) return std::vector<std::string>();
  if (!v.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const nlohmann::json& e : v) {
    if (!e.is_string()) return std::nullopt;
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::string list_text(const std::vector<std::string>& v) {
  return v.empty() ? std::string("(unset)") : fmt::format("{}", fmt::join(v, " "));
}

// Equal splits: the same normalized weights ("90,10,0" is "9, 1, 0"); text that does not parse compares as text.
bool same_split(const std::string& a, const std::string& b) {
  try {
    return parse_split(a) == parse_split(b);
  } catch (const std::exception&) {
    return a == b;
  }
}

}  // namespace

std::vector<std::string> changed_data_args(const nlohmann::json& saved_args, const DataArgs& run,
                                           int64_t consumed_train_samples) {
  const std::string consequence = fmt::format(
      "the run goes on from consumed sample {} of the new data's sample order (Megatron does not compare data "
      "flags on resume); give the checkpoint's value to continue its data",
      consumed_train_samples);
  std::vector<std::string> lines;
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {{"data_path", &run.data_path},
                                                                           {"train_data_path", &run.train_data_path},
                                                                           {"valid_data_path", &run.valid_data_path},
                                                                           {"test_data_path", &run.test_data_path}};
  for (const auto& [key, now] : lists) {
    const std::optional<std::vector<std::string>> saved = saved_list(saved_args, key);
    if (!saved || *saved == *now) continue;
    std::string flag = std::string("--") + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    lines.push_back(fmt::format("resuming with {} {}, but the checkpoint was trained with {} {}; {}", flag,
                                list_text(*now), flag, list_text(*saved), consequence));
  }
  const std::optional<std::vector<std::string>> saved_paths = saved_list(saved_args, "data_path");
  if (saved_paths && !saved_paths->empty() && !run.data_path.empty() && run.split && saved_args.contains("split") &&
      saved_args["split"].is_string()) {
    const std::string saved = saved_args["split"].get<std::string>();
    if (!same_split(saved, *run.split))
      lines.push_back(fmt::format("resuming with --split {}, but the checkpoint was trained with --split {}; {}",
                                  *run.split, saved, consequence));
  }
  return lines;
}

}  // namespace gptrain
