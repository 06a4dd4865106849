// --attention-backend and --deterministic-mode: Megatron's values map to gptrain's CUDA attention
// kernels or are rejected with a reason; the CPU backend takes only "auto" and is always deterministic.
#include "core/common/error.h"
#include "error_text.h"
#include "core/config/train_args.h"
#include "core/train/setup.h"
#include "kernels/backend.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gptrain;

namespace {

std::vector<std::string> minimal(std::vector<std::string> more) {
  std::vector<std::string> a = {"pretrain_gpt",
                                "--num-layers",
                                "1",
                                "--hidden-size",
                                "32",
                                "--num-attention-heads",
                                "2",
                                "--seq-length",
                                "8",
                                "--max-position-embeddings",
                                "8",
                                "--micro-batch-size",
                                "1",
                                "--train-iters",
                                "1",
                                "--lr",
                                "1e-3",
                                "--mock-data",
                                "--device",
                                "cpu"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TrainArgs parse_kernel_args(std::vector<std::string> args) {
  std::vector<const char*> argv;
  for (auto& s : args) argv.push_back(s.c_str());
  std::optional<TrainArgs> a = parse_train_args(int(argv.size()), argv.data(), 1);
  REQUIRE(a.has_value());
  return *a;
}

std::string rejection(std::vector<std::string> args) {
  return test::error_text([&] { parse_kernel_args(std::move(args)); });
}

}  // namespace

TEST_CASE("config: --attention-backend maps Megatron's values, rejects unfused and local") {
  REQUIRE(parse_kernel_args(minimal({})).backend.attention_backend == "auto");
  REQUIRE(parse_kernel_args(minimal({"--attention-backend", "flash"})).backend.attention_backend == "flash");
  REQUIRE(
      parse_attention_backend(parse_kernel_args(minimal({"--attention-backend", "fused"})).backend.attention_backend) ==
      AttentionBackend::Cudnn);
  REQUIRE(parse_attention_backend("flash") == AttentionBackend::Flash);
  REQUIRE(parse_attention_backend("auto") == AttentionBackend::Auto);
  REQUIRE(parse_attention_backend("flash-fma") == AttentionBackend::FlashFma);
  REQUIRE(std::string(attention_backend_name(AttentionBackend::FlashFma)) == "flash-fma");
  REQUIRE(parse_kernel_args(minimal({"--attention-backend", "flash-fma"})).backend.attention_backend == "flash-fma");
  for (const char* v : {"unfused", "local"}) {
    const std::string r = rejection(minimal({"--attention-backend", v}));
    REQUIRE(r.find(std::string("--attention-backend ") + v) != std::string::npos);
    REQUIRE(r.find("no unfused attention") != std::string::npos);
  }
  const std::string r = rejection(minimal({"--attention-backend", "xformers"}));
  REQUIRE(r.find("'xformers'") != std::string::npos);
  REQUIRE(r.find("auto, cudnn (alias fused), flash") != std::string::npos);
}

TEST_CASE("config: --deterministic-mode parses and is recorded in the args JSON") {
  REQUIRE_FALSE(parse_kernel_args(minimal({})).backend.deterministic_mode);
  const TrainArgs a = parse_kernel_args(minimal({"--deterministic-mode"}));
  REQUIRE(a.backend.deterministic_mode);
  const nlohmann::json j = train_args_to_json(a);
  REQUIRE(j.at("deterministic_mode") == true);
  REQUIRE(j.at("attention_backend") == "auto");
}

TEST_CASE("config: the CPU backend takes --attention-backend auto only and accepts --deterministic-mode") {
  auto be = make_training_backend(parse_kernel_args(minimal({"--deterministic-mode"})));
  REQUIRE(std::string(be->name()) == "cpu");
  for (const char* v : {"flash", "fused"}) {
    std::string msg;
    try {
      make_training_backend(parse_kernel_args(minimal({"--attention-backend", v})));
    } catch (const Error& e) {
      msg = e.what();
    }
    REQUIRE(msg.find("the cpu backend has one attention implementation") != std::string::npos);
  }
}

TEST_CASE("config: a head dim above the cuda backend's attention limit is refused at start-up, naming the device") {
  check_attention_head_dim("cpu", 256, "cpu");  // the CPU twin takes any head dim
  check_attention_head_dim("cuda", 128, "cuda device 0");
  std::string msg;
  try {
    check_attention_head_dim("cuda", 256, "cuda device 0");
  } catch (const Error& e) {
    msg = e.what();
  }
  REQUIRE(msg.find("head dim 256 (--kv-channels) is not supported on cuda device 0") != std::string::npos);
  REQUIRE(msg.find("up to 128") != std::string::npos);
}
