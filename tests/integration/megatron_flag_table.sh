#!/usr/bin/env bash
# The flag pages of docs/ that mirror pretrain_gpt's flag table (docs/flags.md, docs/flags-without-effect.md,
# docs/megatron-flag-status.md with its counts per Megatron argument group) are exactly what
# scripts/gen_flag_docs.py makes from `pretrain_gpt --list-flags` and docs/megatron-flags.tsv today, and no
# flag of Megatron's pretraining groups is unknown to pretrain_gpt. ~2 s.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_TMP:?}"
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
"$GPTRAIN_BIN/pretrain_gpt" --list-flags >flags.json
gen=$GPTRAIN_SRC/scripts/gen_flag_docs.py
python3 "$gen" --list-flags flags.json --check ||
  { echo "FAIL: the docs/ flag pages differ from pretrain_gpt --list-flags (diff above)"; exit 1; }
mkdir fresh
python3 "$gen" --list-flags flags.json --docs fresh >/dev/null
row='^\| [^|]+ \| `--[^|]+ \| unknown \|'  # a flag's row: | group | `--flag` | unknown | note |
unknown=$(grep -cE "$row" fresh/megatron-flag-status.md || true)
[ "$unknown" = 0 ] ||
  { grep -E "$row" fresh/megatron-flag-status.md; echo "FAIL: $unknown Megatron flag(s) unknown to pretrain_gpt"; exit 1; }
echo "megatron_flag_table: the docs/ flag pages match pretrain_gpt --list-flags; no unknown Megatron flag"
