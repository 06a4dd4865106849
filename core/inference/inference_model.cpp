#include "core/inference/inference_model.h"

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_json.h"
#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"
#include "core/model/stage_activations.h"
#include "core/train/setup.h"

namespace gptrain {

InferenceModel::InferenceModel(const std::string& load_dir, std::optional<int64_t> step, int T,
                               const std::string& backend) {
  using checkpoint::Checkpoint;
  const auto ck = Checkpoint::open(load_dir, step ? std::optional(checkpoint::Step::at(*step)) : std::nullopt);
  dir_ = ck.dir();
  auto desc = checkpoint::model_from_json(ck.metadata().model, ck.dir() + "/metadata.json");
  StageConfig c(desc.config);
  if (T <= 0) T = c.max_position_embeddings;
  if (T > c.max_position_embeddings)
    fail("{} positions exceed the model's max_position_embeddings {}", T, c.max_position_embeddings);
  c.seq_length = T;
  c.micro_batch_size = 1;
  c.hidden_dropout = c.attention_dropout = 0.0f;
  // No vocabulary padding: a checkpoint's padding depends on the TP size it was saved with, and the
  // padded rows are never real tokens. Without them the output layer has the same shape, and so the same
  // GEMM blocking and bits, whatever layout wrote the checkpoint.
  c.finalize(1);
  config_ = c;
  backend_ = make_backend(backend, DType::F32);
  check_attention_head_dim(backend_->name(), c.kv_channels, fmt::format("the {} backend", backend_->name()));
  stage_ = std::make_unique<GptStage>(config_, *backend_);
  checkpoint::load_stage_parameters(*stage_, ck);
  if (const std::vector<float> bias = checkpoint::read_expert_bias(ck, config_); !bias.empty())
    stage_->set_expert_bias(bias);
  acts_ = stage_->make_activations();
}

InferenceModel::~InferenceModel() = default;

std::vector<float> InferenceModel::logits(const std::vector<int32_t>& tokens) {
  const int T = config_.seq_length;
  const int n = static_cast<int>(tokens.size());
  check(n >= 1 && n <= T, "inference: {} tokens given, the model was loaded for 1..{}", n, T);
  HostMicroBatch mb;
  mb.tokens = tokens;
  mb.tokens.resize(T, 0);
  mb.labels.assign(T, 0);
  mb.loss_mask.assign(T, 1.0f);
  for (int t = 0; t < T; ++t) mb.position_ids.push_back(t);
  stage_->load_batch(*acts_, mb);
  stage_->forward(*acts_, nullptr, false);
  const int V = stage_->sizes().V;  // (T, V) padded
  const int vocab = config_.vocab_size;
  std::vector<float> padded(static_cast<std::size_t>(n) * V);
  backend_->copy_to_host(padded.data(), acts_->logits, padded.size() * sizeof(float));
  std::vector<float> out(static_cast<std::size_t>(n) * vocab);  // (n, vocab)
  for (int t = 0; t < n; ++t) std::copy_n(padded.begin() + int64_t(t) * V, vocab, out.begin() + int64_t(t) * vocab);
  return out;
}

}  // namespace gptrain
