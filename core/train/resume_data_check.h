// A resume on other data: metadata.json's args record the --data-path, the per-split paths and the --split
// the checkpoint was trained with. Megatron does not compare them on resume (a new blend for the rest of a
// run is a usual change, e.g. an annealing phase), so a changed one is not refused; but the consumed-sample
// cursor then indexes another sample order, which should not pass unnoticed: the run warns.
#pragma once

#include "data/loader/gpt_data.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gptrain {

// One line per data flag whose value differs from the checkpoint's (--split compared as normalized
// weights, and only when both runs use --data-path): "resuming with --split 80,20,0, but the checkpoint was
// trained with --split 90,10,0; ...". Flags the checkpoint's args do not record are not compared.
std::vector<std::string> changed_data_args(const nlohmann::json& saved_args, const DataArgs& run,
                                           int64_t consumed_train_samples);

}  // namespace gptrain
