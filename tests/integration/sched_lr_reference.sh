#!/usr/bin/env bash
# LR / weight-decay schedule vs an independent plain-Python reference (tests/python/lr_schedule_ref.py):
# ~25 flag sets (every decay style, WSD anneal styles, sample- and iteration-based, warmup fraction/init,
# weight-decay ramps, and flag sets Megatron rejects), several hundred sample counts. < 5 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}" "${GPTRAIN_PYTHON:?}"
if [ ! -x "$GPTRAIN_PYTHON" ]; then echo "SKIP: no reference python at $GPTRAIN_PYTHON (run scripts/python_refs.sh)"; exit 77; fi
if [ ! -x "$GPTRAIN_BIN/unit_core" ]; then echo "SKIP: $GPTRAIN_BIN/unit_core not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"

"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/lr_schedule_ref.py" "$GPTRAIN_TMP/lr_reference.json"
rc=0
GPTRAIN_LR_REFERENCE="$GPTRAIN_TMP/lr_reference.json" "$GPTRAIN_BIN/unit_core" "[.lr_reference]" \
  > "$GPTRAIN_TMP/catch.log" 2>&1 || rc=$?
# On success print the summary; on failure the mismatching points (case, sample count, both values).
if [ "$rc" -eq 0 ]; then grep -A2 'compared' "$GPTRAIN_TMP/catch.log" || true; tail -2 "$GPTRAIN_TMP/catch.log"
else head -c 20000 "$GPTRAIN_TMP/catch.log"; fi
exit "$rc"
