#!/usr/bin/env bash
# Family parity of Llama-3.1 / 3.2 (rope_scaling "llama3"; 3.2 with tied embeddings) under mpirun -np 2:
# tensor parallel 2 (llama31: the 2 GQA groups split, each rank rotating its heads with the scaled
# frequencies), pipeline parallel 2 (llama32: tied embeddings on both stages) and data parallel 2 (llama31):
# pretrain_gpt --load <converted tiny HF model> --finetune must give the losses and trained weights of
# transformers + torch.optim.AdamW, as the single-process tests/integration/family_llama31.sh does.
# tests/python/family_parity.py. ~60 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi2 "--tensor-model-parallel-size 2" llama31
family_parity_mpi2 "--pipeline-model-parallel-size 2" llama32
family_parity_mpi2 "" llama31
