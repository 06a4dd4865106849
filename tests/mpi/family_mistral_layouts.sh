#!/usr/bin/env bash
# Family parity of mistral (sliding window 5 of 16 tokens, GQA, head_dim 24) under mpirun -np 8 as tensor
# parallel 2 x pipeline parallel 2 x data parallel 2 (each TP rank one KV group and its two query heads, the
# window on the local heads; one windowed layer per stage), stopped after iteration 3 and resumed:
# pretrain_gpt --load <converted tiny HF model> --finetune must give the losses and trained weights of
# transformers + torch.optim.AdamW, as tests/integration/family_mistral.sh does in one process.
# tests/python/family_parity.py. ~35 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi 8 "$FAMILY_LAYOUT_8" mistral
