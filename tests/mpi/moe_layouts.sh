#!/usr/bin/env bash
# MoE models under every kind of parallelism, through pretrain_gpt: a tiny Mixtral-like model (MoE layers 0,
# 2, 3 of 4 with a dense layer 1; 4 experts top-2; load-balancing and z losses; dropout 0) trained 6
# iterations under PP 2, DP 2, the interleaved pipeline, the distributed optimizer, DP 2 x PP 2, TP 2 (with
# and without sequence parallelism), EP 2 (both token dispatchers), EP 2 x TP 2 with sequence parallelism,
# and all of them together (TP 2 x SP x PP 2 x DP 2 with EP 2 and the distributed optimizer, 8 ranks) must
# print the losses of one process: lm loss, z_loss and load_balancing_loss within 1e-6 relative every
# iteration (the MoE losses are each layer's mean over the step's micro-batches and DP replicas, summed over
# stages: the same for every layout), and the per-layer tokens-per-expert lines identical. ~30 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 8 --train-iters 6 --lr 1e-2 --mock-data --vocab-size 97
        --log-interval 1 --eval-iters 0 --seed 3 --hidden-dropout 0 --attention-dropout 0 --normalization RMSNorm
        --swiglu --position-embedding-type rope --disable-bias-linear --ffn-hidden-size 48 --num-experts 4
        --moe-layer-freq "[1,0,1,1]" --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001 --moe-per-layer-logging
        --distributed-timeout-minutes 1)
# "iter K lm X z Y lb Z" per iteration, and the per-layer lines' token counts.
losses() {
  sed -nE 's/.*iteration +([0-9]+)\/.*lm loss: ([^ ]+) \| z_loss: ([^ ]+) \| load_balancing_loss: ([^ ]+) \|.*/\1 \2 \3 \4/p' "$1"
}
tokens() { grep -oE "layer [0-9]+:.*" "$1" | sed -E 's/z_loss [^ ]+ load_balancing_loss [^ ]+//g'; }
"$bin" "${common[@]}" > "$GPTRAIN_TMP/ref.log"
losses "$GPTRAIN_TMP/ref.log" > "$GPTRAIN_TMP/ref.txt"
[ "$(wc -l < "$GPTRAIN_TMP/ref.txt")" -eq 6 ] || { cat "$GPTRAIN_TMP/ref.log"; echo "FAIL: no MoE losses logged"; exit 1; }
layouts=(
  "2|--pipeline-model-parallel-size 2"
  "2|"
  "2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
  "2|--use-distributed-optimizer"
  "4|--pipeline-model-parallel-size 2"
  "2|--tensor-model-parallel-size 2"
  "2|--tensor-model-parallel-size 2 --sequence-parallel"
  "2|--expert-model-parallel-size 2"
  "2|--expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall"
  "4|--expert-model-parallel-size 2 --tensor-model-parallel-size 2 --sequence-parallel"
  "8|--expert-model-parallel-size 2 --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2 --use-distributed-optimizer --moe-token-dispatcher-type alltoall"
)
fail=0
for spec in "${layouts[@]}"; do
  n=${spec%%|*}
  flags=${spec#*|}
  out=$GPTRAIN_TMP/out.log
  # shellcheck disable=SC2086
  mpirun_n "$n" "$bin" "${common[@]}" $flags > "$out" 2>&1 || { cat "$out"; exit 1; }
  losses "$out" > "$GPTRAIN_TMP/got.txt"
  err=$(paste "$GPTRAIN_TMP/ref.txt" "$GPTRAIN_TMP/got.txt" | awk '
    NF != 8 || $1 != $5 { bad = 1 }
    { for (i = 2; i <= 4; ++i) { e = $i - $(i + 4); if (e < 0) e = -e; e /= $i; if (e > m) m = e } }
    END { if (bad || NR != 6) print "mismatch"; else printf "%.3e\n", m + 0 }')
  same_tokens=$(cmp -s <(tokens "$GPTRAIN_TMP/ref.log") <(tokens "$out") && echo identical || echo DIFFER)
  ok=$(awk -v e="$err" -v t="$same_tokens" 'BEGIN { print (e != "mismatch" && e <= 1e-6 && t == "identical") ? "ok" : "FAIL" }')
  printf 'np=%s %-80s max rel err (lm, z, lb) %s, tokens per expert %s %s\n' "$n" "${flags:-(data parallel)}" \
    "$err" "$same_tokens" "$ok"
  [ "$ok" = ok ] || fail=1
done
exit $fail
