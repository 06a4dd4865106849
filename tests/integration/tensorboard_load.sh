#!/usr/bin/env bash
# TensorBoard event files from core/metrics/tensorboard_writer load in the tensorboard Python package:
# the hidden Catch2 test "[.tensorboard_file]" writes a file, tests/python/check_tensorboard_file.py
# reads it with EventAccumulator (tags, steps, float32 values) and re-checks every record's CRC. < 10 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}" "${GPTRAIN_PYTHON:?}"
if [ ! -x "$GPTRAIN_PYTHON" ]; then echo "SKIP: no reference python at $GPTRAIN_PYTHON (run scripts/python_refs.sh)"; exit 77; fi
if ! "$GPTRAIN_PYTHON" -c "import tensorboard" 2>/dev/null; then echo "SKIP: the tensorboard package is not installed in $GPTRAIN_PYTHON"; exit 77; fi
if [ ! -x "$GPTRAIN_BIN/unit_core" ]; then echo "SKIP: $GPTRAIN_BIN/unit_core not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"

GPTRAIN_TB_DIR="$GPTRAIN_TMP/tb" "$GPTRAIN_BIN/unit_core" "[.tensorboard_file]"
"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/check_tensorboard_file.py" "$GPTRAIN_TMP/tb"
