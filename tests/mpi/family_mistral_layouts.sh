#!/usr/bin/env bash
# Family parity of mistral (sliding window 5 of 16 tokens, GQA, head_dim 24) under mpirun -np 2 in three
# layouts: tensor parallel 2 (each rank one KV group and its two query heads, the window on the local
# heads), pipeline parallel 2 (one windowed layer per stage) and data parallel 2. pretrain_gpt --load
# <converted tiny HF model> --finetune must give the losses and trained weights of transformers +
# torch.optim.AdamW, as tests/integration/family_mistral.sh does in one process. tests/python/family_parity.py.
# ~60 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi2 "--tensor-model-parallel-size 2" mistral
family_parity_mpi2 "--pipeline-model-parallel-size 2" mistral
family_parity_mpi2 "" mistral
