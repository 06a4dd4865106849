#!/usr/bin/env bash
# Expert parallelism gives the single-process losses: a tiny Mixtral-style model (Llama switches, 4
# experts top-2 in every layer, load-balancing and z losses) trained 6 iterations under TP 2 with sequence
# parallelism (also with MoE recomputation), EP 2 and 4 (both token dispatchers), EP x TP (also with sequence
# parallelism), EP x PP (1F1B and interleaved), EP with the distributed optimizer (expert
# shards over the expert-data-parallel group) and gradient-reduce overlap, and with MoE / full recomputation
# (the exchanges replayed); dropless and with a capacity
# factor (tokens dropped per rank, as Megatron); Sinkhorn routing under EP 2 (both dispatchers); with dropout, TP 2
# (alone, with sequence parallelism, and with EP 2). Per-iteration losses and gradient norms, and the
# evaluation loss after training, must match world 1 within 1e-6 relative. Prints each layout's error.
# Under EP every rank also checks that its token-exchange buffers stayed within the memory plan's bound.
# ~1-2 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--arch llama --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001
  --train-iters 6 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1)
layouts=(
  "2|"
  "2|--tensor-model-parallel-size 2"
  "2|--tensor-model-parallel-size 2 --sequence-parallel"
  "2|--tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity selective --recompute-modules moe"
  "2|--expert-model-parallel-size 2"
  "2|--expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall"
  "4|--expert-model-parallel-size 4 --moe-token-dispatcher-type alltoall"
  "4|--expert-model-parallel-size 2 --tensor-model-parallel-size 2 --moe-token-dispatcher-type alltoall"
  "4|--expert-model-parallel-size 2 --tensor-model-parallel-size 2 --sequence-parallel"
  "4|--expert-model-parallel-size 2 --pipeline-model-parallel-size 2"
  "4|--expert-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 --moe-token-dispatcher-type alltoall"
  "2|--expert-model-parallel-size 2 --use-distributed-optimizer"
  "2|--expert-model-parallel-size 2 --recompute-granularity selective --recompute-modules moe --moe-token-dispatcher-type alltoall"
  "2|--expert-model-parallel-size 2 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  "4|--expert-model-parallel-size 2 --use-distributed-optimizer --overlap-grad-reduce --moe-token-dispatcher-type alltoall"
)
# Largest relative difference of the gradient norms ("iter K loss X grad_norm G") of REF and OUT.
max_norm_err() {
  awk '$1 == "iter" && $5 == "grad_norm" { if (NR == FNR) { ref[$2] = $6; next } e = $6 - ref[$2]; if (e < 0) e = -e
       e /= ref[$2]; if (e > m) m = e } END { printf "%.3e\n", m + 0 }' "$1" "$2"
}
fail=0
# run_layouts CASE-FLAGS LAYOUT...: world 1 with CASE-FLAGS, then each layout against it.
run_layouts() {
  local case_flags=$1 spec n flags out err nerr ok
  shift
  # shellcheck disable=SC2086
  "$bin" "${common[@]}" $case_flags > "$GPTRAIN_TMP/ref.txt" 2>&1 || { cat "$GPTRAIN_TMP/ref.txt"; exit 1; }
  for spec in "$@"; do
    n=${spec%%|*}
    flags=${spec#*|}
    out=$GPTRAIN_TMP/out.txt
    # shellcheck disable=SC2086
    mpirun_n "$n" "$bin" "${common[@]}" $case_flags $flags > "$out" 2>&1 || { cat "$out"; exit 1; }
    # Under EP the run ends by checking its exchange buffers against the memory plan (mpi_train_check).
    if [[ "$flags" == *expert-model-parallel-size* ]] && ! grep -q "^expert exchange buffers [1-9][0-9]* bytes, planned" "$out"; then
      cat "$out"
      echo "FAIL: no expert exchange buffer line"
      fail=1
    fi
    err=$(max_rel_err "$GPTRAIN_TMP/ref.txt" "$out")
    nerr=$(max_norm_err "$GPTRAIN_TMP/ref.txt" "$out")
    ok=$(awk -v e="$err" -v g="$nerr" 'BEGIN { print (e <= 1e-6 && g <= 1e-6) ? "ok" : "FAIL" }')
    printf 'np=%s %-34s %-100s loss err %s norm err %s %s\n' "$n" "${case_flags:-dropless}" \
      "${flags:-(data parallel)}" "$err" "$nerr" "$ok"
    [ "$ok" = ok ] || fail=1
  done
}
run_layouts "" "${layouts[@]}"
run_layouts "--moe-expert-capacity-factor 1.0" "${layouts[@]}"
# Sinkhorn routing (no load-balancing loss; the choice is over each rank's micro-batch, as in one process).
run_layouts "--moe-router-load-balancing-type sinkhorn --moe-aux-loss-coeff 0" \
  "2|--expert-model-parallel-size 2" "2|--expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall"
# Hidden and attention dropout 0.1: the masks follow the global row (the MoE branch's too) and the layer's
# head, so TP 2, alone, with sequence parallelism and with EP 2, gives the single process's losses.
run_layouts "--dropout 0.1" "2|--tensor-model-parallel-size 2" "2|--tensor-model-parallel-size 2 --sequence-parallel" \
  "4|--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 2"
exit $fail
