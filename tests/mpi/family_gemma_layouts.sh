#!/usr/bin/env bash
# Family parity of gemma under mpirun -np 8 as tensor parallel 2 x pipeline parallel 2 x data parallel 2
# (vocab-parallel embedding with the sqrt(hidden) scale, the 2 KV heads split, embedding on stage 0 and the tied
# head on stage 1), stopped after iteration 3 and resumed: the losses and trained weights of transformers +
# torch.optim.AdamW, as tests/integration/family_gemma.sh does in one process. tests/python/family_parity.py.
# The trained-weight check allows 5e-5 of the elements (instead of 1e-5) to differ by more than 1e-6: TP splits
# the GeGLU and attention products and DP sums the gradients in another order, and Adam turns the nearly
# cancelling gradients of a few elements into LR-sized updates of that rounding (measured: 54 of 3.3M elements
# after 10 iterations in a CPU-only build, 86 in the CUDA-enabled build of CI, the largest difference 7.8e-5,
# under the 5%-of-one-step bound of 1.5e-4). ~10 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi 8 "$FAMILY_LAYOUT_8" gemma --weights-big-fraction 5e-5
