#!/usr/bin/env bash
# Llama / GPT-NeoX / GPT-J / Mixtral / Qwen2 / Qwen2-MoE (and GPT-2) conversion both ways against transformers: bitwise round
# trips, RoPE permutations pinned to gptrain's rope kernel, GPT-J bias folding
# (tests/python/convert_families_roundtrip.py). ~30 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_families_roundtrip.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --tol 1e-4
