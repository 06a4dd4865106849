#!/usr/bin/env bash
# Hybrid sharding (--num-distributed-optimizer-instances N: the distributed optimizer shards over DP / N
# ranks, the N instances are replicas whose shards are all-reduced across them) gives the single process's
# losses and gradient norms within 1e-6 relative (10 iterations, the evaluation after): DP 4 as 2 x 2 (also
# with --overlap-grad-reduce --overlap-param-gather, whose bits must equal the plain run's, the
# inter-instance all-reduces launched in bucket order while backward goes on), DP 4 as 4 instances of one
# rank, TP 2 x DP 2 as 2 x 1, and the tiny Mixtral at EP 2 x DP 4 as 2 x 2 (routed experts sharded over
# EDP / N = 1). Every rank checks that its shard arrays are as long as the memory plan counts. A save under
# DP 4 as 2 x 2 resumes under DP 2 with the distributed optimizer and in one process, the next losses
# within 1e-6 (not bitwise: the DP sums run in another order), and under the same layout bitwise. --use-megatron-fsdp
# --data-parallel-sharding-strategy optim gives the distributed optimizer's bits; Megatron FSDP's ZeRO-2/3
# strategies and bad layouts are refused by flag name.
# ~25 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1 --print-bits
  --ddp-bucket-size 1000)
moe=(--num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01)
h="--use-distributed-optimizer --num-distributed-optimizer-instances"
ov="--overlap-grad-reduce --overlap-param-gather"
# model | processes | layout flags
layouts=(
  "gpt2|4|$h 2"
  "gpt2|4|$h 2 $ov"
  "gpt2|4|$h 4"
  "gpt2|4|--tensor-model-parallel-size 2 $h 2"
  "moe|4|--expert-model-parallel-size 2 $h 2 --overlap-grad-reduce"
)
fail=0
args_of() { if [ "$1" = moe ]; then echo "--arch llama ${moe[*]}"; else echo "--arch $1"; fi; }
for arch in gpt2 moe; do
  # shellcheck disable=SC2046
  train_check "$GPTRAIN_TMP/ref_$arch.txt" 1 $(args_of "$arch")
done
for spec in "${layouts[@]}"; do
  IFS='|' read -r arch n flags <<< "$spec"
  out=$GPTRAIN_TMP/run.txt
  # shellcheck disable=SC2046,SC2086
  train_check "$out" "$n" $(args_of "$arch") $flags
  err=$(max_rel_err "$GPTRAIN_TMP/ref_$arch.txt" "$out")
  norm_err=$(awk 'NR == FNR { if ($1 == "iter") r[$2] = $6; next }
    $1 == "iter" { e = $6 - r[$2]; if (e < 0) e = -e; e /= r[$2]; if (e > m) m = e } END { printf "%.3e", m + 0 }' \
    "$GPTRAIN_TMP/ref_$arch.txt" "$out")
  grep -q "^optimizer shard elements" "$out" || { echo "no shard check in $flags"; fail=1; }
  same=""
  if [[ $flags == *overlap-param-gather* ]]; then
    # shellcheck disable=SC2046,SC2086
    train_check "$GPTRAIN_TMP/plain.txt" "$n" $(args_of "$arch") ${flags%% --overlap*}
    same=" overlap vs plain bits FAIL"
    cmp -s <(bits "$GPTRAIN_TMP/plain.txt") <(bits "$out") && same=" overlap vs plain bits ok"
    launched=$(awk '$1 == "grad_sync" && $6 >= 2 { k++ } END { print k + 0 }' "$out")
    [ "$launched" -eq 10 ] || same="$same; reductions launched in backward in $launched/10 iterations: FAIL"
  fi
  ok=$(awk -v e="$err" -v g="$norm_err" -v s="$same" 'BEGIN { print (e <= 1e-6 && g <= 1e-6 && s !~ /FAIL/) ? "ok" : "FAIL" }')
  printf '%-4s np=%s %-95s loss err %s, grad norm err %s%s %s\n' "$arch" "$n" "$flags" "$err" "$norm_err" "$same" "$ok"
  [ "$ok" = ok ] || { fail=1; tail -5 "$out"; }
done

# Megatron FSDP with the optim strategy is the distributed optimizer: the same bits, hybrid too.
fsdp="--use-megatron-fsdp --data-parallel-sharding-strategy optim --num-distributed-optimizer-instances 2"
# shellcheck disable=SC2086
train_check "$GPTRAIN_TMP/fsdp.txt" 4 --arch gpt2 $fsdp
# shellcheck disable=SC2086
train_check "$GPTRAIN_TMP/distopt.txt" 4 --arch gpt2 $h 2
if [ "$(bits "$GPTRAIN_TMP/fsdp.txt" | wc -l)" -eq 10 ] && cmp -s <(bits "$GPTRAIN_TMP/fsdp.txt") <(bits "$GPTRAIN_TMP/distopt.txt"); then
  echo "gpt2 np=4 $fsdp: the bits of $h 2: ok"
else
  echo "gpt2 np=4 $fsdp: differs from $h 2: FAIL"
  fail=1
fi

# Checkpoint: saved under 2 instances of DP 2 at iteration 4, resumed under DP 2 (distributed optimizer) and in
# one process; iterations 5-10 as the uninterrupted run.
ck=$GPTRAIN_TMP/ck
train_check "$GPTRAIN_TMP/full.txt" 4 --arch llama $h 2 --save "$ck" --save-at 4
# The same layout resumes bitwise (same sums in the same order; moments and masters restored exactly).
# shellcheck disable=SC2086
train_check "$GPTRAIN_TMP/resume.txt" 4 --arch llama $h 2 --load "$ck"
if [ "$(bits "$GPTRAIN_TMP/resume.txt" | wc -l)" -eq 6 ] &&
  cmp -s <(bits "$GPTRAIN_TMP/full.txt" | tail -6) <(bits "$GPTRAIN_TMP/resume.txt"); then
  echo "llama DP 4 as 2 x 2 saved at 4 -> the same layout: iterations 5-10 bitwise: ok"
else
  echo "llama DP 4 as 2 x 2 saved at 4 -> the same layout: not bitwise: FAIL"
  fail=1
fi
for spec in "2|--use-distributed-optimizer" "1|"; do
  n=${spec%%|*}
  flags=${spec#*|}
  # shellcheck disable=SC2086
  train_check "$GPTRAIN_TMP/resume.txt" "$n" --arch llama $flags --load "$ck"
  grep -q "loaded iteration 4" "$GPTRAIN_TMP/resume.txt" || { echo "not resumed"; fail=1; }
  err=$(max_rel_err "$GPTRAIN_TMP/full.txt" "$GPTRAIN_TMP/resume.txt" 5)
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
  printf 'llama DP 4 as 2 x 2 saved at 4 -> np=%s %-28s iterations 5-10 max rel loss err %s %s\n' "$n" "${flags:-(one process)}" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
done

# Refusals name the flag and what is expected.
refused() {  # refused NP "MESSAGE PART" ARGS...
  local n=$1 want=$2
  shift 2
  if mpirun_n "$n" "$bin" --arch gpt2 --train-iters 1 --global-batch-size 8 --micro-batch-size 2 "$@" \
    > "$GPTRAIN_TMP/refused.txt" 2>&1; then
    echo "accepted: $*"
    fail=1
  elif ! grep -q -- "$want" "$GPTRAIN_TMP/refused.txt"; then
    echo "refused without '$want': $*"
    tail -3 "$GPTRAIN_TMP/refused.txt"
    fail=1
  else
    echo "refused: $* ($want): ok"
  fi
}
refused 4 "num-distributed-optimizer-instances 3 must divide the data-parallel size 4" $h 3
refused 2 "num-distributed-optimizer-instances 2 needs --use-distributed-optimizer" --num-distributed-optimizer-instances 2
refused 2 "strategy optim_grads_params (Megatron's default): gradient and parameter sharding" --use-megatron-fsdp
refused 2 "data-parallel-sharding-strategy optim_grads: gradient and parameter sharding" --use-megatron-fsdp \
  --data-parallel-sharding-strategy optim_grads
exit $fail
