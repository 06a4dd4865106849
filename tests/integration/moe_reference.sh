#!/usr/bin/env bash
# Mixture-of-experts ops vs an independent numpy reference of Megatron's definitions and transformers'
# Mixtral block (tests/python/moe_reference.py): router scores and top-k in every mode, the dispatch plan
# and the dropped tokens of each drop policy (with and without padding), the load-balancing losses
# (aux_loss, seq_aux_loss) and the z-loss, Sinkhorn routing (training and evaluation), and which pre-softmax order Mixtral's routing is. < 10 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}" "${GPTRAIN_PYTHON:?}"
if [ ! -x "$GPTRAIN_PYTHON" ]; then echo "SKIP: no reference python at $GPTRAIN_PYTHON (run scripts/python_refs.sh)"; exit 77; fi
if [ ! -x "$GPTRAIN_BIN/unit_kernels" ]; then echo "SKIP: $GPTRAIN_BIN/unit_kernels not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"

"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/moe_reference.py" "$GPTRAIN_TMP/moe_reference.json"
rc=0
GPTRAIN_MOE_REFERENCE="$GPTRAIN_TMP/moe_reference.json" "$GPTRAIN_BIN/unit_kernels" "[.moe_reference]" \
  > "$GPTRAIN_TMP/catch.log" 2>&1 || rc=$?
if [ "$rc" -eq 0 ]; then grep 'compared' "$GPTRAIN_TMP/catch.log" || true; tail -2 "$GPTRAIN_TMP/catch.log"
else head -c 20000 "$GPTRAIN_TMP/catch.log"; fi
exit "$rc"
