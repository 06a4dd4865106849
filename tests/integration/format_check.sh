#!/usr/bin/env bash
# The C++/CUDA sources follow .clang-format (checked with clang-format 14 or newer; skipped when no
# clang-format is installed). Fix with: clang-format -i $(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh'). ~5 s.
set -euo pipefail
cd "${GPTRAIN_SRC:-$(dirname "$0")/../..}"
command -v clang-format >/dev/null || { echo "SKIP: clang-format is not installed"; exit 77; }
major=$(clang-format --version | sed -E 's/.*version ([0-9]+).*/\1/')
[ "$major" -ge 14 ] || { echo "SKIP: clang-format $major is older than 14"; exit 77; }
tmp=${GPTRAIN_TMP:-/tmp/gptrain-format-check}
mkdir -p "$tmp"
files=$(find apps core data kernels parallel tests -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' | sort)
if ! clang-format --dry-run --Werror $files 2> "$tmp/format.txt"; then
  grep -E '^[^ ].*(warning|error):' "$tmp/format.txt" | head -20
  echo "files not formatted to .clang-format: $(grep -cE 'warning|error' "$tmp/format.txt") places"
  exit 1
fi
echo "format: $(echo "$files" | wc -l) files follow .clang-format"
