#!/usr/bin/env bash
# Family parity, gpt_neox: GPT-NeoX (rotary on 25% of each head, two-norm parallel residual, erf GELU, untied).
# A tiny random transformers model is converted with convert_from_hf; (1) gptrain_forward's logits
# must match transformers' on the same tokens (max |diff| <= 1e-5); (2) pretrain_gpt --load --finetune
# for 10 iterations (constant LR, dropout 0, clipping, AdamW with Megatron's decay groups) on a tiny
# .bin/.idx must give the losses of transformers + torch.optim.AdamW on the samples inspect_data lists
# (within 1e-5 relative), and the trained weights must agree. tests/python/family_parity.py. ~30 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_parity_single gpt_neox
