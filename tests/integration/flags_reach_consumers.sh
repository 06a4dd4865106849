#!/usr/bin/env bash
# Every pretrain_gpt flag reaches its consumer (tests/python/flags_reach_consumers.py): each flag the
# table binds changes what a tiny run logs, writes or computes (through the real training path, --dry-run
# or mpirun -np 2); accepted-without-effect flags say so, rejected ones are refused by name. ~1-2 min on
# 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
python3 "$GPTRAIN_SRC/tests/python/flags_reach_consumers.py" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP"
