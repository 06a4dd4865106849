#!/usr/bin/env bash
# Family parity, gpt_neox: GPT-NeoX (rotary on 25% of each head, two-norm parallel residual, erf GELU, untied).
# A tiny random transformers model is converted with convert_from_hf; (1) gptrain_forward's logits
# must match transformers' on the same tokens (max |diff| <= 1e-4); (2) pretrain_gpt --load --finetune
# for 6 iterations (constant LR, dropout 0, clipping, AdamW with Megatron's decay groups) on a tiny
# .bin/.idx must give the losses of transformers + torch.optim.AdamW on the samples inspect_data lists
# (within 1e-5 relative), and the trained weights must agree. tests/python/family_parity.py. ~30 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}"
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
for b in convert_from_hf convert_to_hf gptrain_forward pretrain_gpt inspect_data; do
  if [[ ! -x "$GPTRAIN_BIN/$b" ]]; then echo "SKIP: $GPTRAIN_BIN/$b not built"; exit 77; fi
done
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" family_parity.py --family gpt_neox --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP"
