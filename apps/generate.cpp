// generate: sample text from a gptrain checkpoint (any TP/PP layout) with the CPU or CUDA backend.
//   generate --load ckpts/ --prompt "Once upon a time" --max-new-tokens 64 --top-k 40 --temperature 0.8
// Each new token re-runs the forward over the window (no KV cache): meant for checking a model, not
// for serving; convert_to_hf gives a model that serving stacks load.
#include "core/common/error.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/inference/inference_model.h"
#include "core/checkpoint/checkpoint_tokenizer.h"
#include "core/config/tokenizer_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

namespace {

// Samples an id from logits (vocab) with temperature and top-k (k <= 0: whole vocabulary;
// temperature 0: greedy).
int32_t sample(const float* logits, int vocab, float temperature, int top_k, std::mt19937_64& rng) {
  if (temperature <= 0.0f) return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  const int k = top_k > 0 ? std::min(top_k, vocab) : vocab;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<double> p(k);
  const double top = logits[ids[0]];
  for (int i = 0; i < k; ++i) p[i] = std::exp((logits[ids[i]] - top) / temperature);
  std::discrete_distribution<int> pick(p.begin(), p.end());
  return ids[pick(rng)];
}

int body(int argc, char** argv) {
  std::string prompt = "", backend = "cpu";
  int max_new = 64, top_k = 40;
  float temperature = 1.0f;
  uint64_t seed = 1234;
  gptrain::TrainArgs a;  // the flags shared with pretrain_gpt, bound from its table
  gptrain::FlagTable t = gptrain::train_flag_table(a).only(gptrain::with_tokenizer_flags({"load", "ckpt-step"}));
  t.group("generate");
  t.value("prompt", &prompt, "text to continue (default: start of a document)");
  t.value("max-new-tokens", &max_new, "tokens to generate (1 .. 2^20)");
  t.value("temperature", &temperature, "softmax temperature; 0 = greedy (at most 100)");
  t.value("top-k", &top_k, "sample among the k most likely tokens; 0 = all");
  t.value("seed", &seed, "sampling seed");
  t.choice("backend", &backend, {"cpu", "cuda"}, "compute backend");
  t.require("load");
  if (!t.parse("generate", argc, argv)) return 0;
  gptrain::tokenizer_from_checkpoint(t, a, a.checkpoint.ckpt_step);  // no --tokenizer-* flag: the checkpoint's
  gptrain::check(max_new >= 1 && max_new <= (1 << 20), "--max-new-tokens {} is outside [1, {}]", max_new, 1 << 20);
  gptrain::check(temperature >= 0.0f && temperature <= 100.0f, "--temperature {} is outside [0, 100]", temperature);
  gptrain::check(top_k >= 0, "--top-k {} must be >= 0", top_k);
  const std::unique_ptr<gptrain::Tokenizer> owned = gptrain::make_tokenizer(gptrain::tokenizer_spec(a.tokenizer));
  gptrain::Tokenizer& tok = *owned;
  // An empty prompt starts a document: after the EOD, or at the BOS where the tokenizer has one.
  std::vector<int32_t> ids =
      prompt.empty() ? std::vector<int32_t>{tok.bos_id().value_or(tok.eod_id())} : tok.encode(prompt);

  // The window: as many positions as the model has, the prompt's tail if it is longer.
  gptrain::InferenceModel window(*a.checkpoint.load, a.checkpoint.ckpt_step, 0, backend);
  const int T = window.positions();
  const int vocab = window.config().vocab_size;
  gptrain::check(vocab <= tok.vocab_size(), "the checkpoint's vocabulary ({}) is larger than the tokenizer's ({})",
                 vocab, tok.vocab_size());
  std::mt19937_64 rng(seed);
  std::printf("%s", prompt.c_str());
  std::fflush(stdout);
  for (int i = 0; i < max_new; ++i) {
    const std::size_t start = ids.size() > static_cast<std::size_t>(T) ? ids.size() - T : 0;
    std::vector<int32_t> ctx(ids.begin() + start, ids.end());
    const auto logits = window.logits(ctx);  // (ctx, vocab)
    const int32_t next = sample(logits.data() + (ctx.size() - 1) * vocab, vocab, temperature, top_k, rng);
    if (next == tok.eod_id()) break;
    ids.push_back(next);
    const std::string piece = tok.decode_continuation(std::span<const int32_t>(&next, 1));
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("generate", body, argc, argv); }
