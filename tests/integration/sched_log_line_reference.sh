#!/usr/bin/env bash
# Megatron log lines: gptrain's formatter vs Python's str.format of the same format strings over 2000
# random value sets (rounding, widths, exponents, optional fields, dropped negative losses). < 5 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}" "${GPTRAIN_PYTHON:?}"
if [ ! -x "$GPTRAIN_PYTHON" ]; then echo "SKIP: no reference python at $GPTRAIN_PYTHON (run scripts/python_refs.sh)"; exit 77; fi
if [ ! -x "$GPTRAIN_BIN/unit_core" ]; then echo "SKIP: $GPTRAIN_BIN/unit_core not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export TZ=UTC

"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/log_line_ref.py" "$GPTRAIN_TMP/log_lines.json" 2000
rc=0
GPTRAIN_LOG_LINE_REFERENCE="$GPTRAIN_TMP/log_lines.json" "$GPTRAIN_BIN/unit_core" "[.log_line_reference]" \
  > "$GPTRAIN_TMP/catch.log" 2>&1 || rc=$?
if [ "$rc" -eq 0 ]; then grep -A1 'compared' "$GPTRAIN_TMP/catch.log" || true; tail -2 "$GPTRAIN_TMP/catch.log"
else head -c 20000 "$GPTRAIN_TMP/catch.log"; fi
exit "$rc"
