#!/usr/bin/env bash
# --decoupled-lr (with a decaying schedule and its own floor) and --calculate-per-token-loss with
# --eod-mask-loss (micro-batches holding different loss-token counts) under mpirun: pretrain_gpt prints
# the same per-iteration "lm loss" as the single process (to the printed 7 digits, 2e-6 relative) at
# TP2 x PP2 x DP2 with the distributed optimizer (tied embeddings: the last stage's copy is in the
# decoupled group; untied: the output layer is), DP2, PP2 and TP2. The flags must matter: the single
# process's losses with them differ from those without. ~60 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
base=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 1 --global-batch-size 8 --train-iters 6 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 1
  --lr-decay-style cosine --mock-data --vocab-size 250 --log-interval 1 --eval-iters 0 --seed 7
  --hidden-dropout 0 --attention-dropout 0 --distributed-timeout-minutes 1)
groups=(--decoupled-lr 4e-2 --decoupled-min-lr 1e-4 --eod-mask-loss --calculate-per-token-loss)
losses() { sed -E -n 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/\1 \2/p' "$1"; }
max_rel() {  # ref out [first] -> largest relative difference; fails on a missing iteration
  awk -v first="${3:-1}" 'NR == FNR { if ($1 >= first) ref[$1] = $2; next }
    ($1 in ref) { seen[$1] = 1; e = $2 - ref[$1]; if (e < 0) e = -e; e /= ref[$1]; if (e > m) m = e }
    END { for (k in ref) if (!(k in seen)) { print "missing iteration " k > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }' \
    <(losses "$1") <(losses "$2")
}
fail=0
for model in tied untied; do
  extra=()
  [ "$model" = untied ] && extra=(--untie-embeddings-and-output-weights)
  single=$GPTRAIN_TMP/single_$model.log
  "$bin" "${base[@]}" "${extra[@]}" "${groups[@]}" > "$single"
  [ "$(losses "$single" | wc -l)" = 6 ] || { echo "expected 6 loss lines in $single"; exit 1; }
  "$bin" "${base[@]}" "${extra[@]}" > "$GPTRAIN_TMP/without_$model.log"
  gap=$(max_rel "$GPTRAIN_TMP/without_$model.log" "$single" 2)
  ok=$(awk -v e="$gap" 'BEGIN { print (e > 1e-4) ? "ok" : "FAIL" }')
  printf '%-6s single process with vs without the flags: max rel loss difference %s %s\n' "$model" "$gap" "$ok"
  [ "$ok" = ok ] || fail=1
  specs=("8|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --use-distributed-optimizer")
  [ "$model" = tied ] && specs+=("2|--use-distributed-optimizer" "2|--pipeline-model-parallel-size 2"
    "2|--tensor-model-parallel-size 2")
  for spec in "${specs[@]}"; do
    n=${spec%%|*}
    flags=${spec#*|}
    # shellcheck disable=SC2086
    mpirun_n "$n" "$bin" "${base[@]}" "${extra[@]}" "${groups[@]}" $flags > "$GPTRAIN_TMP/par.log" 2>&1 ||
      { tail -20 "$GPTRAIN_TMP/par.log"; exit 1; }
    err=$(max_rel "$single" "$GPTRAIN_TMP/par.log")
    ok=$(awk -v e="$err" 'BEGIN { print (e <= 2e-6) ? "ok" : "FAIL" }')
    printf '%-6s np=%s %-85s max rel loss err %s %s\n' "$model" "$n" "$flags" "$err" "$ok"
    [ "$ok" = ok ] || fail=1
  done
done
exit $fail
