// TokenSource over a tokenized .bin/.idx pair (gptrain::IndexedDataset, data/indexed/).
#pragma once

#include <memory>
#include <string>

#include "data/gpt_dataset/sample_dataset.h"

namespace gptrain {

std::shared_ptr<const TokenSource> open_token_source(const std::string& prefix);

}  // namespace gptrain
