#!/usr/bin/env bash
# Family parity under tensor parallel 2 (llama: the 2 GQA groups split across ranks; gptj: interleaved partial rotary, vocab-parallel output layer with bias,
# --disable-bias-attention: row-parallel out_proj without bias, fc2 bias added once):
# mpirun -np 2 pretrain_gpt --tensor-model-parallel-size 2 --load <converted tiny HF model> --finetune must give the losses
# and trained weights of transformers + torch.optim.AdamW, as the single-process tests/integration/family_*.sh do,
# with the run stopped after iteration 3 and resumed from its checkpoint.
# tests/python/family_parity.py. ~60 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi2 "--tensor-model-parallel-size 2" llama gptj
