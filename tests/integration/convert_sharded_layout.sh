#!/usr/bin/env bash
# A TP2 x PP2 checkpoint converts to the same HF files (and gives the same gptrain logits) as TP1,
# for GPT-2, Llama (GQA, SwiGLU), NeoX and GPT-J (tests/python/convert_sharded_layout.py). ~20 s.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_sharded_layout.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --tp 2 --pp 2
