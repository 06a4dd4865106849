#!/usr/bin/env bash
# Family parity under pipeline parallel 2 (gpt2: tied embeddings on both stages; gpt_neox: two-norm parallel residual):
# mpirun -np 2 pretrain_gpt --pipeline-model-parallel-size 2 --load <converted tiny HF model> --finetune must give the losses
# and trained weights of transformers + torch.optim.AdamW, as the single-process tests/integration/family_*.sh do,
# with the run stopped after iteration 3 and resumed from its checkpoint.
# tests/python/family_parity.py. ~60 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi2 "--pipeline-model-parallel-size 2" gpt2 gpt_neox
