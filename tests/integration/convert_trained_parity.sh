#!/usr/bin/env bash
# Models trained by pretrain_gpt (GPT-2, Llama-style, NeoX-style, GPT-J-style; 8 iterations each on mock
# data), converted by convert_to_hf and loaded by transformers: logits == gptrain_forward's
# (fp32, <= 1e-4), generate() runs, and the HF directory converts back with the same logits
# (tests/python/convert_trained_parity.py). ~40 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if [[ ! -x "$GPTRAIN_BIN/pretrain_gpt" ]]; then echo "SKIP: $GPTRAIN_BIN/pretrain_gpt is not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_trained_parity.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --tol 1e-4 \
  --vocab "$GPTRAIN_SRC/data/gpt2/vocab.json" --merges "$GPTRAIN_SRC/data/gpt2/merges.txt"
