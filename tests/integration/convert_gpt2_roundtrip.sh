#!/usr/bin/env bash
# HF GPT-2 -> gptrain -> HF round trip, dtypes, sharding and malformed inputs against transformers,
# torch and safetensors (tests/python/convert_gpt2_roundtrip.py). ~20 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_gpt2_roundtrip.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" \
  --vocab "$GPTRAIN_SRC/data/gpt2/vocab.json" --merges "$GPTRAIN_SRC/data/gpt2/merges.txt"
