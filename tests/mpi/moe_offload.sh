#!/usr/bin/env bash
# Offloading changes no bit of a mixture-of-experts run either: a tiny Mixtral-style model (Llama switches,
# 4 experts top-2 in every layer, load-balancing and z losses, dropout) with the first layers' activations
# offloaded (the MoE layers' permuted rows and expert activations included), with half of the optimizer
# state on the host, and both with MoE recomputation, gives the iteration losses and gradient norms (hex
# floats) of the same layout without offloading: in one process, dropless and with a capacity factor, and
# under EP 2 with the distributed optimizer (expert shards over the expert-data-parallel group, which the
# optimizer offload cuts like the dense ones). ~1 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--arch llama --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001
  --num-layers 3 --dropout 0.1 --train-iters 4 --global-batch-size 8 --micro-batch-size 2 --print-bits
  --distributed-timeout-minutes 1)
choices=(
  "--cpu-offloading-num-layers 2"
  "--optimizer-cpu-offload --optimizer-offload-fraction 0.5"
  "--cpu-offloading-num-layers 2 --optimizer-cpu-offload --recompute-granularity selective --recompute-modules moe"
)
# processes | layout flags
layouts=(
  "1|"
  "1|--moe-expert-capacity-factor 1.0"
  "2|--expert-model-parallel-size 2 --use-distributed-optimizer --moe-token-dispatcher-type alltoall"
)
fail=0
for spec in "${layouts[@]}"; do
  n=${spec%%|*}
  # shellcheck disable=SC2206
  flags=(${spec#*|})
  train_check "$GPTRAIN_TMP/ref.txt" "$n" "${flags[@]}"
  [ -n "$(bits "$GPTRAIN_TMP/ref.txt")" ] || { cat "$GPTRAIN_TMP/ref.txt"; echo "FAIL: no bits lines"; exit 1; }
  for choice in "${choices[@]}"; do
    # shellcheck disable=SC2206
    train_check "$GPTRAIN_TMP/out.txt" "$n" "${flags[@]}" $choice
    if [ "$(bits "$GPTRAIN_TMP/ref.txt")" = "$(bits "$GPTRAIN_TMP/out.txt")" ]; then
      echo "ok   np=$n ${flags[*]:-(one process)} + $choice: every loss and norm bit equal"
    else
      echo "FAIL np=$n ${flags[*]:-(one process)} + $choice"
      diff <(bits "$GPTRAIN_TMP/ref.txt") <(bits "$GPTRAIN_TMP/out.txt") | head -5
      fail=1
    fi
  done
done
[ "$fail" = 0 ] && echo "moe_offload: OK"
exit $fail
