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
# With TP 2 the experts are split over TP by default (expert tensor parallelism, ETP = TP, as Megatron); the
# ETP block also runs ETP 1 (experts whole on every TP rank), ETP 2 x PP 2 and ETP 2 with the distributed
# optimizer (EP 1 and 2), ETP 1 with EP 2 = TP (the experts split over the TP ranks; also with PP 2, and with
# the distributed optimizer and sequence parallelism), and checks the rows summed over the ETP group against
# the plan's count.
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
# Expert tensor parallelism (ETP = TP is also what every TP 2 layout above runs): explicitly, ETP 1, with a
# pipeline and with the distributed optimizer (dense DP 2; expert DP 2 with EP 1, 1 with EP 2); and ETP 1 with
# EP 2 = TP (Megatron's EP groups over the TP ranks: the experts whole, split over the TP ranks; expert DP = DP).
etp_layouts=(
  "2|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 2"
  "2|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1"
  "4|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 2 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall"
  "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
  "4|--tensor-model-parallel-size 2 --use-distributed-optimizer"
  "4|--tensor-model-parallel-size 2 --expert-model-parallel-size 2 --use-distributed-optimizer --sequence-parallel"
  "2|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --expert-model-parallel-size 2"
  "4|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --expert-model-parallel-size 2 --pipeline-model-parallel-size 2"
  "4|--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --expert-model-parallel-size 2 --use-distributed-optimizer --sequence-parallel"
)
run_layouts "" "${etp_layouts[@]}"
run_layouts "--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity" "${etp_layouts[2]}" "${etp_layouts[6]}"
# The rows each rank hands to the ETP all-reduces per step: dropless with EP 1 every rank's experts get all
# N x K rows, so the plan's count is exact.
mpirun_n 2 "$bin" "${common[@]}" --tensor-model-parallel-size 2 > "$GPTRAIN_TMP/etp_rows.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/etp_rows.txt"; exit 1; }
if ! grep -q "^expert partial sums \([0-9]*\) rows per step, planned \1$" "$GPTRAIN_TMP/etp_rows.txt"; then
  grep "expert partial sums" "$GPTRAIN_TMP/etp_rows.txt" || echo "no expert partial sums line"
  echo "FAIL: ETP partial-sum rows differ from the plan"
  fail=1
else
  grep "^expert partial sums" "$GPTRAIN_TMP/etp_rows.txt"
fi
# Hidden and attention dropout 0.1: the masks follow the global row (the MoE branch's too) and the layer's
# head, so TP 2, alone, with sequence parallelism and with EP 2, gives the single process's losses.
run_layouts "--dropout 0.1" "2|--tensor-model-parallel-size 2" "2|--tensor-model-parallel-size 2 --sequence-parallel" \
  "4|--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 2"
exit $fail
