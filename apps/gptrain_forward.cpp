// gptrain_forward: loads a checkpoint (any TP/PP layout, resharded to one process) and writes the
// forward logits for given token ids, for parity tests against other implementations.
//   gptrain_forward --load ckpts/ [--ckpt-step N] --tokens 464,3290,318 --output logits.safetensors
// The output holds "logits" (T, vocab_size) F32 (padded vocabulary columns dropped) and "tokens".
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/inference/inference_model.h"
#include "core/safetensors/writer.h"

#include <optional>

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
  std::string tokens_arg, output, backend_name = "cpu";
  gptrain::TrainArgs a;  // the flags shared with pretrain_gpt, bound from its table
  gptrain::FlagTable t = gptrain::train_flag_table(a).only({"load", "ckpt-step"});
  t.group("gptrain_forward");
  t.value("tokens", &tokens_arg, "comma-separated token ids (one sequence)");
  t.value("output", &output, "safetensors file to write (logits (T, vocab) F32)");
  t.choice("backend", &backend_name, {"cpu", "cuda"}, "compute backend");
  t.require("load");
  t.require("tokens");
  t.require("output");
  if (!t.parse("gptrain_forward", argc, argv)) return 0;
  const auto tokens = parse_tokens(tokens_arg);
  const int T = static_cast<int>(tokens.size());
  gptrain::InferenceModel model(*a.checkpoint.load, a.checkpoint.ckpt_step, T, backend_name);
  auto logits = model.logits(tokens);  // (T, vocab)
  const int vocab = model.config().vocab_size;
  std::vector<float> tok_f(tokens.begin(), tokens.end());
  namespace st = gptrain::safetensors;
  const std::vector<st::HostTensorRef> out = {{{"logits", st::DType::F32, {T, vocab}}, logits.data()},
                                              {{"tokens", st::DType::F32, {T}}, tok_f.data()}};
  st::write_file(output, out, {{"checkpoint", model.checkpoint_dir()}});
  gptrain::log::info("gptrain_forward: {} tokens through {} ({} layers) -> {}", T, model.checkpoint_dir(),
                     model.config().num_layers, output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("gptrain_forward", body, argc, argv); }
