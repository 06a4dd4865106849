#!/usr/bin/env bash
# Offloading changes no bit: activation offloading of the first N layers (--cpu-offloading-num-layers),
# optimizer-state offloading (--optimizer-cpu-offload, a fraction or all of it) and both together, alone and
# combined with recomputation, give the iteration losses and gradient norms (hex floats, 4 iterations with
# dropout 0.1), the first iteration's gradients of every rank and every rank's parameters after the 4
# steps of the run without offloading, byte for byte: in one process and under mpirun with TP2, PP2
# interleaved (2 chunks per rank) and DP2 + distributed optimizer (whose shards the optimizer offload cuts).
# Then resume: a run with both offloads saved at iteration 2 and loaded again continues with the bits of
# the uninterrupted run (one process and DP2 + distributed optimizer). ~1.5 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 4 --global-batch-size 8 --micro-batch-size 2 --num-layers 4 --dropout 0.1 --print-bits
  --distributed-timeout-minutes 1)
act="--cpu-offloading-num-layers 3"
opt="--optimizer-cpu-offload --optimizer-offload-fraction 0.5"
choices=(
  "$act"
  "--cpu-offloading --cpu-offloading-num-layers 1"
  "$opt"
  "--optimizer-cpu-offload"
  "$act $opt"
  "$act --recompute-granularity selective --recompute-modules core_attn mlp"
  "$act $opt --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  "$act --recompute-granularity full --recompute-method block --recompute-num-layers 2"
)
# processes | layout flags
layouts=(
  "1|"
  "2|--tensor-model-parallel-size 2"
  "2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
  "2|--use-distributed-optimizer"
)
run() {  # run OUT DIR NP args...: DIR made for the dumps
  mkdir -p "$2"
  train_check "$1" "$3" "${@:4}"
}
fail=0
same_files() {  # same_files REF_DIR DIR PATTERN
  local f ok=ok
  for f in "$1"/$3; do cmp -s "$f" "$2/$(basename "$f")" || ok=FAIL; done
  echo "$ok"
}
for spec in "${layouts[@]}"; do
  IFS='|' read -r n flags <<< "$spec"
  # shellcheck disable=SC2086
  run "$GPTRAIN_TMP/ref.txt" "$GPTRAIN_TMP/ref" "$n" $flags --dump-grads "$GPTRAIN_TMP/ref" --dump-params "$GPTRAIN_TMP/ref"
  [ "$(bits "$GPTRAIN_TMP/ref.txt" | wc -l)" -eq 4 ] || { cat "$GPTRAIN_TMP/ref.txt"; exit 1; }
  for choice in "${choices[@]}"; do
    rm -rf "$GPTRAIN_TMP/off"
    # shellcheck disable=SC2086
    run "$GPTRAIN_TMP/off.txt" "$GPTRAIN_TMP/off" "$n" $flags $choice --dump-grads "$GPTRAIN_TMP/off" \
      --dump-params "$GPTRAIN_TMP/off"
    same=ok
    cmp -s <(bits "$GPTRAIN_TMP/ref.txt") <(bits "$GPTRAIN_TMP/off.txt") || same=FAIL
    grads=$(same_files "$GPTRAIN_TMP/ref" "$GPTRAIN_TMP/off" 'local_*.f32')
    params=$(same_files "$GPTRAIN_TMP/ref" "$GPTRAIN_TMP/off" 'params_*.f32')
    printf 'np=%s %-70s %-100s losses+norms %s, gradients %s, parameters %s\n' "$n" "${flags:-(one process)}" \
      "$choice" "$same" "$grads" "$params"
    [ "$same" = ok ] && [ "$grads" = ok ] && [ "$params" = ok ] ||
      { fail=1; paste <(bits "$GPTRAIN_TMP/ref.txt") <(bits "$GPTRAIN_TMP/off.txt"); }
  done
done
# Resume with both offloads on: save at 2, load, continue to 4; the bits and parameters of the run that
# did not stop.
for spec in "1|" "2|--use-distributed-optimizer"; do
  IFS='|' read -r n flags <<< "$spec"
  ck=$GPTRAIN_TMP/ck_$n
  rm -rf "$ck" "$GPTRAIN_TMP/whole" "$GPTRAIN_TMP/resumed"
  # shellcheck disable=SC2086
  run "$GPTRAIN_TMP/whole.txt" "$GPTRAIN_TMP/whole" "$n" $flags $act $opt --save "$ck" --save-at 2 \
    --dump-params "$GPTRAIN_TMP/whole"
  # shellcheck disable=SC2086
  run "$GPTRAIN_TMP/resumed.txt" "$GPTRAIN_TMP/resumed" "$n" $flags $act $opt --load "$ck" \
    --dump-params "$GPTRAIN_TMP/resumed"
  same=ok
  cmp -s <(bits "$GPTRAIN_TMP/whole.txt" | tail -2) <(bits "$GPTRAIN_TMP/resumed.txt") || same=FAIL
  [ "$(bits "$GPTRAIN_TMP/resumed.txt" | wc -l)" -eq 2 ] || same=FAIL
  params=$(same_files "$GPTRAIN_TMP/whole" "$GPTRAIN_TMP/resumed" 'params_*.f32')
  printf 'resume np=%s %-40s %s %s: iterations 3-4 %s, parameters %s\n' "$n" "${flags:-(one process)}" "$act" "$opt" \
    "$same" "$params"
  [ "$same" = ok ] && [ "$params" = ok ] ||
    { fail=1; paste <(bits "$GPTRAIN_TMP/whole.txt" | tail -2) <(bits "$GPTRAIN_TMP/resumed.txt"); }
done
# The comparison can fail: another dropout rate changes the bits.
run "$GPTRAIN_TMP/other.txt" "$GPTRAIN_TMP/other" 1 $act --dropout 0.2
run "$GPTRAIN_TMP/ref1.txt" "$GPTRAIN_TMP/ref1" 1
if cmp -s <(bits "$GPTRAIN_TMP/ref1.txt") <(bits "$GPTRAIN_TMP/other.txt"); then
  echo "FAIL: --dropout 0.2 gave the bits of --dropout 0.1 (the comparison cannot fail)"
  fail=1
fi
[ "$fail" = 0 ] && echo "offload_layouts: every offload choice bit for bit equal to no offloading in every layout, and resumes"
exit "$fail"
