// pretrain_gpt: GPT pretraining with Megatron-LM's flags (single process; see core/train/pretrain.h).
#include "core/common/error.h"
#include "core/train/pretrain.h"

namespace {
int body(int argc, char** argv) { return gptrain::pretrain_gpt_main(argc, argv); }
}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("pretrain_gpt", body, argc, argv); }
