#!/usr/bin/env bash
# Step time and peak memory of pretrain_gpt on CPU without recomputation, with selective (core_attn;
# core_attn + mlp) and with full recomputation of every layer, in the same invocation: a 12-layer
# 256-wide GPT, seq 256, micro-batch 4, 2 micro-batches per step, dropout on. Each run trains 6
# iterations and reports the mean step time of iterations 2-6 (the log's per-iteration time) and the
# process's peak resident memory (GNU time); the configurations run interleaved REPEAT times (default
# 2), the fastest counts. Full recomputation replays every layer's forward once more: about one extra
# forward, 4/3 of the step if backward costs twice the forward. Between runs a loaded machine moves the
# step time a lot, so each run is also profiled (--profile, iterations 2-6): "replayed" is the time of
# its "recompute" ranges over the rest of the step, measured inside the same process. The loss of the
# last iteration must be the same in every row. Numbers from a machine shared with other jobs are not
# reliable.
#   tests/bench/bench_recompute.sh [build/bin]        ~3-5 min on 2 cores
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
repeat=${REPEAT:-2}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=passive
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=(--num-layers 12 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256
  --micro-batch-size 4 --global-batch-size 8 --train-iters 6 --lr 1e-4 --mock-data --vocab-size 8192
  --log-interval 1 --eval-iters 0 --device cpu --profile --profile-step-start 1 --profile-step-end 6)
names=(none selective-core_attn selective-core_attn+mlp full-uniform-1)
flags=("" "--recompute-granularity selective" "--recompute-granularity selective --recompute-modules core_attn mlp"
  "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
declare -A ms rss plan loss replay
for _ in $(seq "$repeat"); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$tmp/rss" "$bin/pretrain_gpt" "${P[@]}" ${flags[$i]} >"$tmp/log" 2>&1 ||
      { cat "$tmp/log"; exit 1; }
    t=$(sed -E -n 's/.*iteration +([0-9]+)\/.*elapsed time per iteration \(ms\): ([0-9.]+).*/\1 \2/p' "$tmp/log" |
      awk '$1 >= 2 { s += $2; k++ } END { printf "%.1f", s / k }')
    if [ -z "${ms[$n]:-}" ] || awk -v a="$t" -v b="${ms[$n]}" 'BEGIN { exit !(a < b) }'; then ms[$n]=$t; fi
    rss[$n]=$(awk '{ printf "%.1f", $1 / 1024 }' "$tmp/rss")
    plan[$n]=$(grep -m1 "memory plan, " "$tmp/log" | sed -E 's/.* activations ([0-9.]+ [MG]iB) .*/\1/')
    loss[$n]=$(sed -E -n 's/.*iteration +6\/.*lm loss: ([0-9.E+-]+).*/\1/p' "$tmp/log")
    # the profile table: name count total-ms mean-ms share; recompute ranges over the rest of the steps
    replay[$n]=$(awk '$1 == "train-step" { step += $3 } $1 == "recompute" { r += $3 }
      END { printf "%.3f", (step > r ? 1 + r / (step - r) : 0) }' "$tmp/log")
  done
done
echo "pretrain_gpt on CPU ($threads threads), 12 x 256 GPT, seq 256, 2 micro-batches of 4, best of $repeat"
echo "| recomputation | ms/step | / none | replayed (same run) | peak RSS MiB | planned activations | loss, iteration 6 |"
echo "|---|---:|---:|---:|---:|---:|---|"
for n in "${names[@]}"; do
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$n" "${ms[$n]}" "$(awk -v a="${ms[$n]}" -v b="${ms[none]}" \
    'BEGIN { printf "%.3f", a / b }')" "${replay[$n]}" "${rss[$n]}" "${plan[$n]}" "${loss[$n]}"
done
for n in "${names[@]}"; do
  [ "${loss[$n]}" = "${loss[none]}" ] || { echo "FAIL: $n: loss ${loss[$n]} differs from ${loss[none]}"; exit 1; }
done
