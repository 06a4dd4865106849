#!/usr/bin/env bash
# Multi-rank training on the CUDA backend equals the single process: with one GPU, two ranks share it
# and talk over MPI with device buffers staged through host memory (TP2, PP2; a Mixtral-style model at TP2
# with sequence parallelism and at EP2); with two or more GPUs,
# ranks get their own GPU (scripts/launch_mpi.sh binding) and talk over NCCL (TP2, DP2 + distributed
# optimizer, PP2 and interleaved PP2 with batched p2p), and the preflight all-reduce runs on NCCL. Skips without a GPU or a CUDA build. ~1 min.
set -euo pipefail
source "$GPTRAIN_SRC/tests/mpi/common.bash"
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] || { echo "SKIP: no GPU visible (nvidia-smi lists none)"; exit 77; }
bin=$GPTRAIN_BIN/mpi_train_check
common=(--device cuda --train-iters 6 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 2)
if ! "$bin" "${common[@]}" > "$GPTRAIN_TMP/ref.txt" 2>&1; then
  if grep -q "no CUDA backend" "$GPTRAIN_TMP/ref.txt"; then echo "SKIP: this build has no CUDA backend"; exit 77; fi
  cat "$GPTRAIN_TMP/ref.txt"; exit 1
fi
check() {  # np label flags...
  local n=$1 label=$2; shift 2
  "$@" > "$GPTRAIN_TMP/out.txt" 2>&1 || { cat "$GPTRAIN_TMP/out.txt"; exit 1; }
  err=$(max_rel_err "$GPTRAIN_TMP/ref.txt" "$GPTRAIN_TMP/out.txt")
  echo "$label: max rel loss err $err"
  awk -v e="$err" 'BEGIN { exit !(e <= 1e-5) }'
}
# Two ranks on one GPU, MPI with staged device buffers.
check 2 "cuda TP2 over MPI (staged)" mpirun_n 2 "$bin" "${common[@]}" --distributed-backend mpi --tensor-model-parallel-size 2
check 2 "cuda PP2 over MPI (staged)" mpirun_n 2 "$bin" "${common[@]}" --distributed-backend mpi --pipeline-model-parallel-size 2
if [ "$gpus" -ge 2 ]; then
  launch=("$GPTRAIN_SRC/scripts/launch_mpi.sh" -n 2 --gpus-per-node "$gpus" --bin)
  check 2 "cuda TP2 over NCCL" "${launch[@]}" "$bin" -- "${common[@]}" --tensor-model-parallel-size 2
  check 2 "cuda DP2 + distributed optimizer over NCCL" "${launch[@]}" "$bin" -- "${common[@]}" --use-distributed-optimizer
  check 2 "cuda PP2 over NCCL" "${launch[@]}" "$bin" -- "${common[@]}" --pipeline-model-parallel-size 2
  check 2 "cuda interleaved PP2 over NCCL" "${launch[@]}" "$bin" -- "${common[@]}" --pipeline-model-parallel-size 2 \
    --num-layers-per-virtual-pipeline-stage 1
  "${launch[@]}" "$GPTRAIN_BIN/gptrain_preflight" -- --device cuda --size-mb 64 --iters 5 | tee "$GPTRAIN_TMP/pre.txt"
  grep -q "(nccl, device)" "$GPTRAIN_TMP/pre.txt"
else
  echo "NCCL part skipped: $gpus GPU (needs 2)"
fi
# A Mixtral-style model (4 experts, top-2) on the GPU: TP 2 with sequence parallelism and EP 2 (the token
# exchange over MPI from device buffers) against its own single process.
moe=(--arch llama --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001)
"$bin" "${common[@]}" "${moe[@]}" > "$GPTRAIN_TMP/ref.txt" 2>&1 || { cat "$GPTRAIN_TMP/ref.txt"; exit 1; }
check 2 "cuda MoE TP2 + sequence parallel over MPI (staged)" mpirun_n 2 "$bin" "${common[@]}" "${moe[@]}" \
  --distributed-backend mpi --tensor-model-parallel-size 2 --sequence-parallel
check 2 "cuda MoE EP2 alltoall over MPI (staged)" mpirun_n 2 "$bin" "${common[@]}" "${moe[@]}" \
  --distributed-backend mpi --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall
echo "parallel_cuda: ok"
