#!/usr/bin/env bash
# gptrain forward logits == transformers logits (fp32, max abs diff <= 1e-4) for tiny random models
# of every family the converters support, loaded through convert_from_hf. ~15 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" convert_forward_parity.py --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --tol 1e-4
