#!/usr/bin/env bash
# bench_index.sh — time of building Megatron's GPT sample index (document/sample/shuffle index for the
# three splits, written to the cache) for a synthetic 1e9-token uint16 dataset (~2 GB .bin, deleted at
# the end), then of loading it from the cache. Prints a table. ~1-2 min, most of it writing the .bin.
#
#   tests/bench/bench_index.sh [build/bin]        env: TOKENS=1e9  SPARSE=1 (sparse .bin, no disk)
#                                                      BENCH_DIR=/tmp/...  PYTHON=.pyref/bin/python
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}
py=${PYTHON:-$root/.pyref/bin/python}
[ -x "$py" ] || py=python3
tokens=${TOKENS:-1e9}
dir=${BENCH_DIR:-$(mktemp -d /tmp/gptrain_bench_index.XXXXXX)}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
sparse=()
[ "${SPARSE:-0}" = 1 ] && sparse=(--sparse)

t0=$(date +%s.%N)
"$py" "$root/tests/python/dataset_synthetic.py" "$dir/synth" --tokens "$tokens" "${sparse[@]}"
t1=$(date +%s.%N)
printf 'dataset written in %.1f s (%s)\n' "$(echo "$t1 - $t0" | bc)" "$(du -h --apparent-size "$dir/synth.bin" | cut -f1)"
"$bin/inspect_data" summary --data-path "$dir/synth" | head -6

run() {  # run LABEL ARGS...: wall seconds of building/loading every split's index (one sample printed)
  local s e
  s=$(date +%s.%N)
  "$bin/inspect_data" samples --data-path "$dir/synth" --split 969,30,1 --fingerprint --limit 1 \
    --data-cache-path "$dir/cache" "$@" > /dev/null
  e=$(date +%s.%N)
  echo "$e - $s" | bc
}

printf '\n%-44s %10s %10s\n' "configuration" "build (s)" "cached (s)"
for cfg in "--seq-length 2048 --seed 1234" \
           "--seq-length 2048 --train-samples 1500000 --valid-samples 30000 --test-samples 3000" \
           "--seq-length 1024 --train-samples 3000000 --valid-samples 30000 --test-samples 3000" \
           "--seq-length 512 --train-samples 10000000 --valid-samples 60000 --test-samples 6000"; do
  rm -rf "$dir/cache"
  # shellcheck disable=SC2086
  b=$(run $cfg)
  # shellcheck disable=SC2086
  c=$(run $cfg)
  label=$(echo "$cfg" | sed 's/--seq-length /S=/; s/--train-samples /train=/; s/--valid-samples /valid=/; s/--test-samples /test=/; s/--seed 1234/one epoch/')
  printf '%-44s %10.2f %10.2f\n' "$label" "$b" "$c"
done
du -sh "$dir/cache" | awk '{print "index cache size (last configuration): " $1}'
