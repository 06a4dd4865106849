#!/usr/bin/env bash
# Step time and planned device / host memory of pretrain_gpt on CPU without offloading, with activation
# offloading of the first 11 of 12 layers, with all of the optimizer state offloaded, and with both, in
# the same invocation: the model of bench_recompute.sh (12 x 256 GPT, seq 256, 2 micro-batches of 4,
# dropout on). Each run trains 6 iterations; ms/step is the mean of iterations 2-6 (the log's
# per-iteration time), best of REPEAT (default 1) interleaved rounds. "copies + host step" is the share of the step
# spent in the "offload" (activation copies) and "optimizer-host" (host AdamW, its copies included)
# profile ranges, measured inside the same run. The device columns are the memory plan's (on the CPU
# backend the "device" arena is host memory too, so resident memory shows no saving; the plan's figures
# are what a GPU would hold); the host column is what offloading keeps in host memory. The loss of the
# last iteration must be the same in every row.
#   tests/bench/bench_offload.sh [build/bin]        ~2-4 min on 2 cores
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
repeat=${REPEAT:-1}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=(--num-layers 12 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256
  --micro-batch-size 4 --global-batch-size 8 --train-iters 6 --lr 1e-4 --mock-data --vocab-size 8192
  --log-interval 1 --eval-iters 0 --device cpu --profile --profile-step-start 1 --profile-step-end 6)
names=(none activations-11-layers optimizer-all both)
flags=("" "--cpu-offloading-num-layers 11" "--optimizer-cpu-offload"
  "--cpu-offloading-num-layers 11 --optimizer-cpu-offload")
declare -A ms plan_total plan_act plan_opt host loss copies
size() { sed -E -n "s/.*$1 ([0-9.]+ [MG]iB).*/\\1/p" "$tmp/plan" | head -1; }
for _ in $(seq "$repeat"); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    # shellcheck disable=SC2086
    "$bin/pretrain_gpt" "${P[@]}" ${flags[$i]} >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
    t=$(sed -E -n 's/.*iteration +([0-9]+)\/.*elapsed time per iteration \(ms\): ([0-9.]+).*/\1 \2/p' "$tmp/log" |
      awk '$1 >= 2 { s += $2; k++ } END { printf "%.1f", s / k }')
    if [ -z "${ms[$n]:-}" ] || awk -v a="$t" -v b="${ms[$n]}" 'BEGIN { exit !(a < b) }'; then ms[$n]=$t; fi
    grep -m1 "memory plan, " "$tmp/log" >"$tmp/plan"
    plan_total[$n]=$(size ", total")
    plan_act[$n]=$(size ", activations")
    plan_opt[$n]=$(size ", optimizer state")
    host[$n]=$(sed -E -n 's/.*host memory: (.*); ([0-9.]+ [MG]iB) copied per step.*/\1; \2 per step/p' "$tmp/plan")
    host[$n]=${host[$n]:-none}
    loss[$n]=$(sed -E -n 's/.*iteration +6\/.*lm loss: ([0-9.E+-]+).*/\1/p' "$tmp/log")
    copies[$n]=$(awk '$1 == "train-step" { step += $3 } $1 == "offload" || $1 == "optimizer-host" { c += $3 }
      END { printf "%.1f%%", (step > 0 ? 100 * c / step : 0) }' "$tmp/log")
  done
done
echo "pretrain_gpt on CPU ($threads threads), 12 x 256 GPT, seq 256, 2 micro-batches of 4, best of $repeat"
echo "| offloading | ms/step | / none | copies + host step (same run) | planned device total | activations | optimizer state | host memory | loss, iteration 6 |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---|"
for n in "${names[@]}"; do
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "${ms[$n]}" "$(awk -v a="${ms[$n]}" -v b="${ms[none]}" \
    'BEGIN { printf "%.3f", a / b }')" "${copies[$n]}" "${plan_total[$n]}" "${plan_act[$n]}" "${plan_opt[$n]}" \
    "${host[$n]}" "${loss[$n]}"
done
for n in "${names[@]}"; do
  [ "${loss[$n]}" = "${loss[none]}" ] || { echo "FAIL: $n: loss ${loss[$n]} differs from ${loss[none]}"; exit 1; }
done
