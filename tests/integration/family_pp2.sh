#!/usr/bin/env bash
# Family parity under pipeline parallel 2 (gpt2: tied embeddings on both stages; gpt_neox: two-norm parallel residual):
# mpirun -np 2 pretrain_gpt --pipeline-model-parallel-size 2 --load <converted tiny HF model> --finetune must give the losses
# and trained weights of transformers + torch.optim.AdamW, as the single-process family_*.sh tests do.
# tests/python/family_parity.py. ~60 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}"
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if ! command -v mpirun > /dev/null; then echo "SKIP: no mpirun"; exit 77; fi
for b in convert_from_hf convert_to_hf gptrain_forward pretrain_gpt inspect_data; do
  if [[ ! -x "$GPTRAIN_BIN/$b" ]]; then echo "SKIP: $GPTRAIN_BIN/$b not built"; exit 77; fi
done
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export OMP_NUM_THREADS=1
cd "$GPTRAIN_SRC/tests/python"
for fam in gpt2 gpt_neox; do
  mkdir -p "$GPTRAIN_TMP/$fam"
  "$GPTRAIN_PYTHON" family_parity.py --family "$fam" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/$fam" \
    --launcher "mpirun --oversubscribe --allow-run-as-root -np 2" --parallel "--pipeline-model-parallel-size 2"
done
