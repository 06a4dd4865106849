// gptrain_forward: loads a checkpoint (any TP/PP layout, resharded to one process) and writes the
// forward logits for given token ids, for parity tests against other implementations.
//   gptrain_forward --load ckpts/ [--ckpt-step N] --tokens 464,3290,318 --output logits.safetensors
// The output holds "logits" (T, vocab_size) F32 (padded vocabulary columns dropped) and "tokens".
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_json.h"
#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "core/safetensors/writer.h"

#include <CLI/CLI.hpp>

namespace {

std::vector<int32_t> parse_tokens(const std::string& s) {
  std::vector<int32_t> v;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t j = s.find(',', i);
    const std::string item = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
    try {
      std::size_t used = 0;
      const long x = std::stol(item, &used);
      if (used != item.size() || x < 0) throw std::invalid_argument(item);
      v.push_back(static_cast<int32_t>(x));
    } catch (const std::exception&) {
      gptrain::fail("--tokens: \"{}\" is not a non-negative token id (expected e.g. 464,3290,318)", item);
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  if (v.empty()) gptrain::fail("--tokens: no token ids given");
  return v;
}

int body(int argc, char** argv) {
  std::string load, tokens_arg, output, backend_name = "cpu";
  int64_t step = -1;
  CLI::App app{"Forward logits of a gptrain checkpoint for given token ids"};
  app.add_option("--load", load, "checkpoint directory")->required();
  app.add_option("--ckpt-step", step, "iteration (default: the latest)");
  app.add_option("--tokens", tokens_arg, "comma-separated token ids (one sequence)")->required();
  app.add_option("--output", output, "safetensors file to write (logits (T, vocab) F32)")->required();
  app.add_option("--backend", backend_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  using gptrain::checkpoint::Checkpoint;
  const auto ck = Checkpoint::open(load, step >= 0 ? std::optional(gptrain::checkpoint::Step::at(step)) : std::nullopt);
  auto desc = gptrain::checkpoint::model_from_json(ck.metadata().model, ck.dir() + "/metadata.json");
  const auto tokens = parse_tokens(tokens_arg);
  const int T = static_cast<int>(tokens.size());
  gptrain::ModelConfig c = desc.config;
  if (T > c.max_position_embeddings)
    gptrain::fail("--tokens: {} tokens exceed the model's max_position_embeddings {}", T, c.max_position_embeddings);
  c.seq_length = T;
  c.micro_batch_size = 1;
  c.hidden_dropout = c.attention_dropout = 0.0f;
  const int padded = c.padded_vocab_size;
  c.finalize(1);
  c.padded_vocab_size = padded;  // keep the checkpoint's padding (it depends on the saving run's TP)

  auto backend = gptrain::make_backend(backend_name, gptrain::DType::F32);
  gptrain::GptStage stage(c, *backend);
  gptrain::checkpoint::load_stage_parameters(stage, ck);
  auto acts = stage.make_activations();
  gptrain::HostMicroBatch mb;
  mb.tokens = tokens;
  mb.labels.assign(T, 0);
  mb.loss_mask.assign(T, 1.0f);
  for (int t = 0; t < T; ++t) mb.position_ids.push_back(t);
  stage.load_batch(*acts, mb);
  stage.forward(*acts, nullptr, false);
  const auto& s = stage.sizes();
  std::vector<float> logits(static_cast<std::size_t>(T) * s.V);
  backend->copy_to_host(logits.data(), acts->logits, logits.size() * sizeof(float));
  std::vector<float> trimmed;
  trimmed.reserve(static_cast<std::size_t>(T) * c.vocab_size);
  for (int t = 0; t < T; ++t) trimmed.insert(trimmed.end(), logits.begin() + int64_t(t) * s.V, logits.begin() + int64_t(t) * s.V + c.vocab_size);
  std::vector<float> tok_f(tokens.begin(), tokens.end());
  namespace st = gptrain::safetensors;
  const std::vector<st::HostTensorRef> out = {{{"logits", st::DType::F32, {T, c.vocab_size}}, trimmed.data()},
                                              {{"tokens", st::DType::F32, {T}}, tok_f.data()}};
  st::write_file(output, out, {{"checkpoint", ck.dir()}});
  gptrain::log::info("gptrain_forward: {} tokens through {} ({} layers) -> {}", T, ck.dir(), c.num_layers, output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("gptrain_forward", body, argc, argv); }
