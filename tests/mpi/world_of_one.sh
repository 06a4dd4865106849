#!/usr/bin/env bash
# A single process is the world of one of the one training path: pretrain_gpt started without a launcher
# (self communicators, no MPI) and under `mpirun -np 1` (MPI communicators of one rank) print the same
# iteration and validation losses and grad norms, bit for bit in the metrics file, and write checkpoints
# holding the same tensors (dropout on, so the dropout stream is exercised too). ~10 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 6 --lr 1e-2 --mock-data --vocab-size 250 --log-interval 1
  --eval-interval 3 --eval-iters 1 --seed 11 --save-interval 6 --device cpu)
"$bin" "${common[@]}" --metrics-file "$GPTRAIN_TMP/single.jsonl" --save "$GPTRAIN_TMP/ck_single" > "$GPTRAIN_TMP/single.log"
grep -q "communicators: self" "$GPTRAIN_TMP/single.log" || { echo "no launcher: expected self communicators"; exit 1; }
mpirun_n 1 "$bin" "${common[@]}" --metrics-file "$GPTRAIN_TMP/mpi.jsonl" --save "$GPTRAIN_TMP/ck_mpi" > "$GPTRAIN_TMP/mpi.log" 2>&1 ||
  { cat "$GPTRAIN_TMP/mpi.log"; exit 1; }
grep -q "communicators: mpi" "$GPTRAIN_TMP/mpi.log" || { echo "mpirun -np 1: expected mpi communicators"; exit 1; }
# The metrics records without their timings: losses, grad norms, learning rates, scales in full precision.
strip() { sed -E 's/"(elapsed_ms_per_iteration|tokens_per_second|throughput_tflops_per_gpu|time)": *[^,}]*,? *//g' "$1"; }
if ! diff <(strip "$GPTRAIN_TMP/single.jsonl") <(strip "$GPTRAIN_TMP/mpi.jsonl") > "$GPTRAIN_TMP/diff.txt"; then
  echo "metrics differ between the single process and mpirun -np 1:"; head "$GPTRAIN_TMP/diff.txt"; exit 1
fi
n=$(grep -c '"iteration"' "$GPTRAIN_TMP/single.jsonl")
[ "$n" -ge 8 ] || { echo "only $n metrics records"; exit 1; }
for f in model_tp00_pp000.safetensors optim_tp00_pp000_dp000.safetensors; do
  cmp "$GPTRAIN_TMP/ck_single/iter_0000006/$f" "$GPTRAIN_TMP/ck_mpi/iter_0000006/$f" ||
    { echo "checkpoint file $f differs"; exit 1; }
done
echo "no launcher (self) and mpirun -np 1 (mpi): $n metrics records and the checkpoint tensors identical: ok"
