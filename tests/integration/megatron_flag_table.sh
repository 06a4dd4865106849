#!/usr/bin/env bash
# The README's table of Megatron flags per argument group and docs/megatron-flag-status.md agree with
# what pretrain_gpt --list-flags says today, and no flag of Megatron's pretraining groups is unknown.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_TMP:?}"
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
"$GPTRAIN_BIN/pretrain_gpt" --list-flags >flags.json
tool=$GPTRAIN_SRC/tests/tools/megatron_flag_table.py
python3 "$tool" --flags "$GPTRAIN_SRC/docs/megatron-flags.tsv" --list-flags flags.json --check "$GPTRAIN_SRC/README.md"
python3 "$tool" --flags "$GPTRAIN_SRC/docs/megatron-flags.tsv" --list-flags flags.json --details status.md >/dev/null
diff -u "$GPTRAIN_SRC/docs/megatron-flag-status.md" status.md ||
  { echo "docs/megatron-flag-status.md is stale: regenerate it with tests/tools/megatron_flag_table.py --details"; exit 1; }
unknown=$(grep -c "| unknown |" status.md || true)
[ "$unknown" = 0 ] || { grep "| unknown |" status.md; echo "$unknown Megatron flag(s) unknown to pretrain_gpt"; exit 1; }
echo "megatron_flag_table: README and docs/megatron-flag-status.md match --list-flags; no unknown flag"
