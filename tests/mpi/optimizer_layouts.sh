#!/usr/bin/env bash
# --optimizer sgd and --optimizer muon under mpirun -np 2 against torch (the tiny Llama, tests/python/
# family_parity.py): SGD at DP 2 with the distributed optimizer (momentum buffers sharded over DP), Muon at
# TP 2 (every matrix's shards gathered over TP and orthogonalized whole, the query, key and value rows
# separately) and at DP 2, each stopped after iteration 3 and resumed, give the losses and trained weights of
# torch.optim.SGD / tests/python/muon_reference.py + torch.optim.AdamW, as tests/integration/
# optimizer_parity.sh does in one process; Lion at DP 2 with the distributed optimizer (its exp_avg sharded)
# gives those of tests/python/lion_reference.py + torch.optim.AdamW; Muon at DP 2 with the distributed
# optimizer (layer-wise: each DP rank steps whole tensors and broadcasts them) gives the torch losses too.
# ~155 s.
# (--distributed-timeout-minutes 10, the default, keeps each --parallel value a string argparse takes as one.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../integration/family_common.bash"
family_parity_mpi 2 "--use-distributed-optimizer --distributed-timeout-minutes 10" llama --optimizer sgd --parts train
family_parity_mpi 2 "--tensor-model-parallel-size 2" llama --optimizer muon --parts train
family_parity_mpi 2 "--distributed-timeout-minutes 10" llama --optimizer muon --parts train
family_parity_mpi 2 "--use-distributed-optimizer --distributed-timeout-minutes 10" llama --optimizer muon --parts train
family_parity_mpi 2 "--use-distributed-optimizer --distributed-timeout-minutes 10" llama --optimizer lion --parts train
