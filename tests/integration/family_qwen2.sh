#!/usr/bin/env bash
# Family parity, qwen2 and qwen2_moe (tests/python/family_parity.py), each a tiny random transformers model
# converted with convert_from_hf, whose gptrain_forward logits must match transformers' (max |diff| <= 1e-5)
# and whose 10 iterations of pretrain_gpt --finetune must give the losses (1e-5 relative) and trained weights of
# transformers + torch.optim.AdamW:
#   qwen2:        Qwen2ForCausalLM, q/k/v biases only (--add-qkv-bias --disable-bias-linear), GQA 4 heads / 2
#                 groups, tied embeddings;
#   qwen2_untied: the same untied (the 7B+ layout), logits only;
#   qwen2_moe:    Qwen2MoeForCausalLM, layer 0 dense (mlp_only_layers), layer 1 with 4 experts top-2 not
#                 renormalised (norm_topk_prob false = --moe-router-pre-softmax) and a shared expert scaled by
#                 its sigmoid gate (--moe-shared-expert-gate); the load_balancing_loss logged at iteration 1
#                 equals transformers' load_balancing_loss_func / K, and training adds it with coefficient 0.05.
# RoPE base 100 in both (Qwen's is 1e6): every rotary pair then turns within the 16-token window, so the k
# biases' gradients are not near-cancelling sums that Adam would turn into LR-sized updates of rounding noise
# (with base 1e6 a k bias element ends 2.9e-4 apart, twice the 5%-of-one-step bound). The tied qwen2's trained
# weights allow 5e-5 of the elements (instead of 1e-5) to differ by more than 1e-6: measured 139 of 3.3M, spread
# over every tensor, the largest 7.1e-5 (bound 1.5e-4). ~60 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_setup
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
mkdir -p "$GPTRAIN_TMP/qwen2" "$GPTRAIN_TMP/qwen2_moe"
"$GPTRAIN_PYTHON" family_parity.py --family qwen2 --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/qwen2" --logits-tol 1e-5 \
  --iters 10 --weights-big-fraction 5e-5
"$GPTRAIN_PYTHON" family_parity.py --family qwen2_moe --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/qwen2_moe" \
  --logits-tol 1e-5 --iters 10
mkdir -p "$GPTRAIN_TMP/qwen2_untied"
"$GPTRAIN_PYTHON" family_parity.py --family qwen2_untied --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/qwen2_untied" \
  --logits-tol 1e-5 --parts logits
