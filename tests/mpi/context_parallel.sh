#!/usr/bin/env bash
# Context parallelism (--context-parallel-size 2, the p2p K/V ring with Megatron's load-balanced chunks)
# gives the single process's losses and gradient norms within 1e-6 absolute: a tiny GPT-2 (learned
# positions) and a tiny Llama (RoPE positions of the global sequence, GQA) trained 6 iterations (dropout
# 0) under CP 2, CP 2 x TP 2 with sequence parallelism, CP 2 x PP 2, CP 2 x DP 2, and CP 2 with the
# distributed optimizer (sharded over DP x CP), plus the forward-only evaluation loss. The K/V ring's
# buffers stay within the memory plan. Then a checkpoint saved under CP 2 (distributed optimizer) at
# iteration 3 resumes in one process with the next losses equal to the uninterrupted CP 2 run's within
# 1e-6. Prints each layout's measured differences. ~6-20 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 6 --global-batch-size 8 --micro-batch-size 2 --num-layers 2 --distributed-timeout-minutes 1)
fail=0
# diffs REF OUT [FIRST]: "max |loss diff| max |grad-norm diff|" over the iter (and eval) lines.
diffs() {
  awk -v first="${3:-1}" '
    NR == FNR { if (($1 == "iter" || $1 == "eval") && $2 >= first) { l[$1 $2] = $4; if ($1 == "iter") g[$2] = $6; n++ } next }
    ($1 == "iter" || $1 == "eval") && ($1 $2 in l) { seen++; d = $4 - l[$1 $2]; if (d < 0) d = -d; if (d > ml) ml = d
      if ($1 == "iter") { d = $6 - g[$2]; if (d < 0) d = -d; if (d > mg) mg = d } }
    END { if (n == 0 || seen != n) { print "missing iterations" > "/dev/stderr"; exit 1 } printf "%.3e %.3e\n", ml, mg }
  ' "$1" "$2"
}
report() {  # report LABEL REF OUT [FIRST]
  local d
  d=$(diffs "$2" "$3" "${4:-1}")
  ok=$(echo "$d" | awk '{ print ($1 <= 1e-6 && $2 <= 1e-6) ? "ok" : "FAIL" }')
  printf '%-70s max |loss diff| %s  max |grad-norm diff| %s %s\n' "$1" "${d% *}" "${d#* }" "$ok"
  [ "$ok" = ok ] || fail=1
}
for arch in gpt2 llama; do
  ref=$GPTRAIN_TMP/ref_$arch.txt
  train_check "$ref" 1 --arch "$arch"
  for spec in "2|" "4|--tensor-model-parallel-size 2 --sequence-parallel" "4|--pipeline-model-parallel-size 2" \
    "4|" "2|--use-distributed-optimizer"; do
    n=${spec%%|*}
    flags=${spec#*|}
    out=$GPTRAIN_TMP/out.txt
    # shellcheck disable=SC2086
    train_check "$out" "$n" --arch "$arch" --context-parallel-size 2 $flags
    grep -q "^context exchange buffers" "$out"
    report "$arch np=$n CP 2 ${flags:-(alone, or x DP 2 at np=4)}" "$ref" "$out"
  done
done
# Checkpoint saved under CP 2 (moments sharded over DP x CP) resumes in one process.
ck=$GPTRAIN_TMP/ck_cp
train_check "$GPTRAIN_TMP/full_cp.txt" 2 --arch llama --context-parallel-size 2 --use-distributed-optimizer \
  --save "$ck" --save-at 3
train_check "$GPTRAIN_TMP/resume.txt" 1 --arch llama --load "$ck"
grep -q "loaded iteration 3" "$GPTRAIN_TMP/resume.txt"
report "llama CP 2 + distributed optimizer save at 3 -> np=1 resume (iters 4-6)" "$GPTRAIN_TMP/full_cp.txt" \
  "$GPTRAIN_TMP/resume.txt" 4
exit $fail
