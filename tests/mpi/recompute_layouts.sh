#!/usr/bin/env bash
# Activation recomputation changes no bit: with dropout on (0.1: the replays must draw the same masks),
# every --recompute-* choice gives the iteration losses and gradient norms (hex floats, 4 iterations)
# and the first iteration's gradients of every rank (before the data-parallel reduction, compared
# byte for byte) of the run that keeps every activation, in one process and under mpirun: TP2, TP2 +
# sequence parallel, PP2 (1F1B), PP2 interleaved (2 chunks per rank), DP2 + distributed optimizer,
# and the Llama-style model; full recomputation with --distribute-saved-activations under TP2 and
# TP2 x PP2 interleaved. Prints one line per layout and choice. ~1 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 4 --global-batch-size 8 --micro-batch-size 2 --num-layers 4 --dropout 0.1 --print-bits
  --distributed-timeout-minutes 1)
sel="--recompute-granularity selective"
choices=(
  "$sel"
  "$sel --recompute-modules core_attn mlp layernorm"
  "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  "--recompute-granularity full --recompute-method uniform --recompute-num-layers 3"
  "--recompute-granularity full --recompute-method block --recompute-num-layers 1"
  "--recompute-activations"
)
# model | processes | layout flags
layouts=(
  "gpt2|1|"
  "llama|1|"
  "gpt2|2|--tensor-model-parallel-size 2"
  "gpt2|2|--tensor-model-parallel-size 2 --sequence-parallel"
  "gpt2|2|--pipeline-model-parallel-size 2"
  "gpt2|2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
  "gpt2|2|--use-distributed-optimizer"
  "llama|2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
)
run() {  # run OUT DUMPDIR NP args...
  mkdir -p "$2"
  train_check "$1" "$3" --dump-grads "$2" "${@:4}"
}
fail=0
check_layout() {  # check_layout ARCH NP "LAYOUT FLAGS" CHOICE...: each choice against the layout without one
  local arch=$1 n=$2 flags=$3 choice same grads f
  shift 3
  # shellcheck disable=SC2086
  run "$GPTRAIN_TMP/ref.txt" "$GPTRAIN_TMP/ref" "$n" --arch "$arch" $flags
  [ "$(bits "$GPTRAIN_TMP/ref.txt" | wc -l)" -eq 4 ] || { cat "$GPTRAIN_TMP/ref.txt"; exit 1; }
  for choice in "$@"; do
    rm -rf "$GPTRAIN_TMP/rc"
    # shellcheck disable=SC2086
    run "$GPTRAIN_TMP/rc.txt" "$GPTRAIN_TMP/rc" "$n" --arch "$arch" $flags $choice
    same=ok
    cmp -s <(bits "$GPTRAIN_TMP/ref.txt") <(bits "$GPTRAIN_TMP/rc.txt") || same=FAIL
    grads=ok
    for f in "$GPTRAIN_TMP"/ref/local_*.f32; do
      cmp -s "$f" "$GPTRAIN_TMP/rc/$(basename "$f")" || grads=FAIL
    done
    printf '%-5s np=%s %-72s %-78s losses+norms %s, gradients %s\n' "$arch" "$n" "${flags:-(one process)}" "$choice" \
      "$same" "$grads"
    [ "$same" = ok ] && [ "$grads" = ok ] || { fail=1; paste <(bits "$GPTRAIN_TMP/ref.txt") <(bits "$GPTRAIN_TMP/rc.txt"); }
  done
}
for spec in "${layouts[@]}"; do
  IFS='|' read -r arch n flags <<< "$spec"
  check_layout "$arch" "$n" "$flags" "${choices[@]}"
done
# --distribute-saved-activations: each TP rank keeps half of every kept group input (TP, no SP).
split=--distribute-saved-activations
distributed=("${choices[2]} $split" "${choices[3]} $split" "${choices[4]} $split")
check_layout gpt2 2 "--tensor-model-parallel-size 2" "${distributed[@]}"
check_layout llama 2 "--tensor-model-parallel-size 2" "${distributed[@]}"
check_layout gpt2 4 "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1" \
  "${distributed[@]}"
# The comparison can fail: another dropout rate changes the bits.
run "$GPTRAIN_TMP/other.txt" "$GPTRAIN_TMP/other" 1 --dropout 0.2
run "$GPTRAIN_TMP/ref1.txt" "$GPTRAIN_TMP/ref1" 1
if cmp -s <(bits "$GPTRAIN_TMP/ref1.txt") <(bits "$GPTRAIN_TMP/other.txt"); then
  echo "FAIL: --dropout 0.2 gave the bits of --dropout 0.1 (the comparison cannot fail)"
  fail=1
fi
[ "$fail" = 0 ] && echo "recompute_layouts: every choice bit for bit equal to no recomputation in every layout"
exit "$fail"
