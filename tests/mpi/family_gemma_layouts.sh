#!/usr/bin/env bash
# Family parity of gemma under mpirun -np 2 on CPU ranks: TP 2 (vocab-parallel embedding with the sqrt(hidden)
# scale, the tied head, the 2 KV heads split), PP 2 (embedding on stage 0, tied head on stage 1) and
# DP 2 must each give transformers' training losses (tests/python/family_parity.py, --parts train).
# ~50 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi2 "--tensor-model-parallel-size 2" gemma
family_parity_mpi2 "--pipeline-model-parallel-size 2" gemma
family_parity_mpi2 "" gemma
