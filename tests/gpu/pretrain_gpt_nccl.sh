#!/usr/bin/env bash
# pretrain_gpt on two GPUs over NCCL (one rank per GPU, bound by scripts/launch_mpi.sh) prints the
# per-iteration and validation losses of the single-GPU run: TP2, PP2 (pipeline activations and
# gradients in one NCCL group per schedule step) and the interleaved PP2. Skips (exit 77, with the
# reason) with fewer than 2 GPUs or without a CUDA build. ~1 min on two GPUs.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
[ "$gpus" -ge 2 ] || { echo "SKIP: needs 2 or more GPUs for NCCL between ranks; nvidia-smi lists $gpus"; exit 77; }
command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--device cuda --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32
  --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 8 --train-iters 8 --lr 1e-3 --mock-data
  --vocab-size 256 --log-interval 1 --eval-interval 4 --eval-iters 1 --seed 7 --hidden-dropout 0
  --attention-dropout 0 --distributed-timeout-minutes 2)
if ! "$bin" "${common[@]}" > "$GPTRAIN_TMP/single.log" 2>&1; then
  if grep -q "no CUDA backend" "$GPTRAIN_TMP/single.log"; then echo "SKIP: this build has no CUDA backend"; exit 77; fi
  cat "$GPTRAIN_TMP/single.log"; exit 1
fi
# "K X" per training iteration, "vK X" per validation line.
losses() {
  sed -E -n -e 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/\1 \2/p' \
    -e 's/.*validation loss at iteration ([0-9]+) \| lm loss value: ([0-9.E+-]+).*/v\1 \2/p' "$1"
}
[ "$(losses "$GPTRAIN_TMP/single.log" | wc -l)" -ge 10 ] || { echo "no loss lines in the single-GPU log"; exit 1; }
fail=0
for flags in "--tensor-model-parallel-size 2" "--pipeline-model-parallel-size 2" \
  "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"; do
  log=$GPTRAIN_TMP/par.log
  # shellcheck disable=SC2086
  timeout 300 "$GPTRAIN_SRC/scripts/launch_mpi.sh" -n 2 --gpus-per-node "$gpus" --bin "$bin" -- \
    "${common[@]}" $flags > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
  grep -q "cuda backend, nccl communicators" "$log" || { echo "$flags: did not run over NCCL"; tail -30 "$log"; exit 1; }
  err=$(awk 'NR == FNR { ref[$1] = $2; next } ($1 in ref) { seen[$1] = 1; e = $2 - ref[$1]; if (e < 0) e = -e;
      e /= ref[$1]; if (e > m) m = e } END { for (k in ref) if (!(k in seen)) { print "missing " k > "/dev/stderr"; exit 1 }
      printf "%.3e\n", m + 0 }' <(losses "$GPTRAIN_TMP/single.log") <(losses "$log"))
  # fp32 on the GPU: TP splits the matmuls, so sums round differently; PP alone keeps them.
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-5) ? "ok" : "FAIL" }')
  printf 'pretrain_gpt 2 GPUs NCCL %-75s max rel loss err %s %s\n' "$flags" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
done
exit $fail
