#!/usr/bin/env bash
# --apply-layernorm-1p end to end (LayerNorm and RMSNorm models, 8 iterations on mock data): the same first
# step as the plain model, refusal of mismatched checkpoints, bitwise resume, convert_to_hf writing 1 + w
# with transformers' logits and loss == gptrain_forward's (fp32, <= 1e-4), and convert_from_hf
# --apply-layernorm-1p storing gamma - 1 (tests/python/convert_layernorm_1p.py). ~35 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if [[ ! -x "$GPTRAIN_BIN/pretrain_gpt" ]]; then echo "SKIP: $GPTRAIN_BIN/pretrain_gpt is not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_layernorm_1p.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --tol 1e-4 \
  --vocab "$GPTRAIN_SRC/data/gpt2/vocab.json" --merges "$GPTRAIN_SRC/data/gpt2/merges.txt"
