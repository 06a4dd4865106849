#!/usr/bin/env bash
# A checkpoint saved by 4 MPI ranks at TP2 x PP2 (tests/mpi/train_check.cpp, GPT-2 and Llama-style)
# converts to the same HF files as the same weights at TP1, and transformers' logits on the export
# equal gptrain_forward's (tests/python/convert_mpi_layout.py). ~30 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if ! command -v mpirun > /dev/null; then echo "SKIP: no mpirun"; exit 77; fi
if [[ ! -x "$GPTRAIN_BIN/mpi_train_check" ]]; then echo "SKIP: $GPTRAIN_BIN/mpi_train_check is not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export OMP_NUM_THREADS=1
for arch in gpt2 llama; do
  ck=$GPTRAIN_TMP/ck_$arch
  timeout 300 mpirun --oversubscribe --allow-run-as-root -np 4 "$GPTRAIN_BIN/mpi_train_check" --arch $arch \
    --train-iters 5 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1 \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --save "$ck" --save-at 5 \
    > "$GPTRAIN_TMP/train_$arch.txt" 2>&1 || { cat "$GPTRAIN_TMP/train_$arch.txt"; exit 1; }
  (cd "$GPTRAIN_SRC/tests/python" && "$GPTRAIN_PYTHON" convert_mpi_layout.py --bin "$GPTRAIN_BIN" --ckpt "$ck" \
    --tmp "$GPTRAIN_TMP/$arch" --tol 1e-4)
done
