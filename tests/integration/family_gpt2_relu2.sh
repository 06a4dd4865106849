#!/usr/bin/env bash
# Family parity, gpt2_relu2: GPT-2 with transformers' "relu2" MLP activation, which is gptrain's (Megatron's)
# --squared-relu: convert_from_hf maps it, gptrain_forward's logits match transformers' (max |diff| <= 1e-5),
# pretrain_gpt --load --finetune for 10 iterations gives the losses of transformers + torch.optim.AdamW (1e-5
# relative) and the same trained weights, and convert_to_hf writes "relu2" back. tests/python/family_parity.py.
# ~30 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_parity_single gpt2_relu2
