// A checkpoint loaded for inference on one process: any saved TP/PP layout is resharded into one
// GptStage (dropout off, micro-batch 1) that returns next-token logits. Used by gptrain_forward (parity
// tests) and generate (sampling).
#pragma once

#include "core/model/gpt_stage.h"
#include "kernels/backend.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct StageActivations;

class InferenceModel {
 public:
  // load_dir: a --save directory (latest or `step`); T: positions per forward (<= max positions;
  // T <= 0: all of them).
  InferenceModel(const std::string& load_dir, std::optional<int64_t> step, int T, const std::string& backend);
  ~InferenceModel();

  const StageConfig& config() const { return config_; }
  const std::string& checkpoint_dir() const { return dir_; }
  int positions() const { return config_.seq_length; }

  // Logits (tokens.size(), vocab_size) for each position, padded vocabulary columns dropped.
  // tokens.size() <= positions(); shorter inputs are padded at the end (causal: no effect on them).
  std::vector<float> logits(const std::vector<int32_t>& tokens);

 private:
  StageConfig config_;
  std::string dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GptStage> stage_;
  std::unique_ptr<StageActivations> acts_;
};

}  // namespace gptrain
