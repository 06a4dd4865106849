#!/usr/bin/env bash
# Family parity of Llama-3.1 / 3.2 (rope_scaling "llama3"; 3.2 with tied embeddings) under mpirun -np 8 as
# tensor parallel 2 x pipeline parallel 2 x data parallel 2 (the 2 GQA groups split, each rank rotating its
# heads with the scaled frequencies; 3.2's tied embeddings on both stages): pretrain_gpt --load <converted
# tiny HF model> --finetune, stopped after iteration 3 and resumed, must give the losses and trained weights
# of transformers + torch.optim.AdamW, as the single-process tests/integration/family_llama31.sh does; the
# same for a Llama with rope_scaling "yarn" (--position-embedding-type yarn). tests/python/family_parity.py. ~105 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi 8 "$FAMILY_LAYOUT_8" llama31
family_parity_mpi 8 "$FAMILY_LAYOUT_8" llama32
family_parity_mpi 8 "$FAMILY_LAYOUT_8" llama_yarn
