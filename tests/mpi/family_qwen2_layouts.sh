#!/usr/bin/env bash
# Family parity of qwen2 (QKV-only bias: the bias split with its heads under TP; tied embeddings on both pipeline
# stages) and qwen2_moe (a gated shared expert next to the routed experts, 2 of the 4 experts per expert-parallel
# rank) under mpirun -np 8 as tensor parallel 2 x pipeline parallel 2 x data parallel 2 (qwen2_moe with expert
# parallel 2), stopped after iteration 3 and resumed: the losses and trained weights of transformers +
# torch.optim.AdamW, as the single-process tests/integration/family_qwen2.sh (qwen2 with its allowance of 5e-5 of
# the trained elements off by more than 1e-6, explained there). tests/python/family_parity.py. ~75 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi 8 "$FAMILY_LAYOUT_8" qwen2 --weights-big-fraction 5e-5
family_parity_mpi 8 "$FAMILY_LAYOUT_8 --expert-model-parallel-size 2" qwen2_moe
