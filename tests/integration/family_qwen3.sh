#!/usr/bin/env bash
# Family parity, qwen3 and qwen3_moe (per-head Q/K RMSNorm before RoPE = --qk-layernorm, head_dim 32 with hidden
# 64 / 4 heads, GQA, RoPE base 1e6; qwen3 tied, qwen3_moe untied with a dense layer 0 and a sparse layer 1 of
# 4 experts top-2 routed with norm_topk_prob false = --moe-router-pre-softmax). transformers 4.46.3 has no
# Qwen3: the reference is tests/python/qwen3_reference.py, a torch model with transformers' tensor names and
# config keys. (1) gptrain_forward's logits equal the reference's (1e-5); (2) 10 iterations of pretrain_gpt
# --finetune equal the reference + torch.optim.AdamW (1e-5 relative), and so do the trained weights exported
# with convert_to_hf. tests/python/family_parity.py. ~15 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_setup
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
for fam in qwen3 qwen3_moe; do
  mkdir -p "$GPTRAIN_TMP/$fam"
  "$GPTRAIN_PYTHON" family_parity.py --family "$fam" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/$fam" \
    --logits-tol 1e-5 --iters 10
done
