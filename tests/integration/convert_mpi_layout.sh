#!/usr/bin/env bash
# A checkpoint saved by 4 MPI ranks at TP2 x PP2 (tests/mpi/train_check.cpp, GPT-2, Llama-style, and
# Mixtral-style with the experts split over TP by expert tensor parallelism) converts to the same HF files as the same weights at TP1, and transformers' logits on the export
# equal gptrain_forward's (tests/python/convert_mpi_layout.py). ~45 s on 2 cores.
set -euo pipefail
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if ! command -v mpirun > /dev/null; then echo "SKIP: no mpirun"; exit 77; fi
if [[ ! -x "$GPTRAIN_BIN/mpi_train_check" ]]; then echo "SKIP: $GPTRAIN_BIN/mpi_train_check is not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export OMP_NUM_THREADS=1
# moe: the Llama switches with 4 experts top-2, whose experts TP 2 splits over their ffn width (ETP 2).
for case in "gpt2|--arch gpt2" "llama|--arch llama" "moe|--arch llama --num-experts 4 --moe-router-topk 2"; do
  name=${case%%|*}
  ck=$GPTRAIN_TMP/ck_$name
  # shellcheck disable=SC2086
  timeout 300 mpirun --oversubscribe --allow-run-as-root -np 4 "$GPTRAIN_BIN/mpi_train_check" ${case#*|} \
    --train-iters 5 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1 \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --save "$ck" --save-at 5 \
    > "$GPTRAIN_TMP/train_$name.txt" 2>&1 || { cat "$GPTRAIN_TMP/train_$name.txt"; exit 1; }
  (cd "$GPTRAIN_SRC/tests/python" && "$GPTRAIN_PYTHON" convert_mpi_layout.py --bin "$GPTRAIN_BIN" --ckpt "$ck" \
    --tmp "$GPTRAIN_TMP/$name" --tol 1e-4)
done
