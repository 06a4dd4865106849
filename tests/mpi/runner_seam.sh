#!/usr/bin/env bash
# The training loop's seam: parallel::ParallelRunner (core/train/model_runner.h) gives core/train's
# LocalRunner losses — bitwise in one process, within 1e-6 relative at TP2xPP2, DP2 with the
# distributed optimizer, and the interleaved pipeline — for 10 training steps and a forward-only
# evaluation. ~30 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1)
fail=0
for arch in gpt2 llama; do
  "$bin" --arch "$arch" "${common[@]}" --runner local > "$GPTRAIN_TMP/local.txt"
  for spec in "1|" "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2" "2|--use-distributed-optimizer" \
    "2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"; do
    n=${spec%%|*}
    flags=${spec#*|}
    # shellcheck disable=SC2086
    mpirun_n "$n" "$bin" --arch "$arch" "${common[@]}" --runner parallel $flags > "$GPTRAIN_TMP/out.txt" 2>&1 ||
      { cat "$GPTRAIN_TMP/out.txt"; exit 1; }
    err=$(max_rel_err "$GPTRAIN_TMP/local.txt" "$GPTRAIN_TMP/out.txt")
    limit=1e-6
    [ "$n" = 1 ] && limit=0  # one process: the same arithmetic as LocalRunner
    ok=$(awk -v e="$err" -v l="$limit" 'BEGIN { print (e <= l) ? "ok" : "FAIL" }')
    printf '%-6s ParallelRunner np=%s %-75s vs LocalRunner max rel err %s %s\n' "$arch" "$n" "$flags" "$err" "$ok"
    [ "$ok" = ok ] || fail=1
  done
done
exit $fail
