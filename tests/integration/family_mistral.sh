#!/usr/bin/env bash
# Family parity, mistral: MistralForCausalLM with sliding_window 5 inside the 16-token sequence (Megatron's
# --window-size 4,0: query t sees keys t-4..t), GQA 4 heads / 2 groups, head_dim 24 != hidden / heads, no
# biases, untied. A tiny random transformers model is converted with convert_from_hf; (1) gptrain_forward's
# logits must match transformers' eager attention (max |diff| <= 1e-5); (2) 10 iterations of pretrain_gpt
# --load --finetune must give the losses of transformers + torch.optim.AdamW (1e-5 relative) and the same
# trained weights. tests/python/family_parity.py. ~20 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_setup
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
"$GPTRAIN_PYTHON" family_parity.py --family mistral --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --logits-tol 1e-5 --iters 10
