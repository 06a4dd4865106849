#!/usr/bin/env bash
# Communicator collectives vs serial results on 1-4 ranks (world and TP/DP/PP groups), and the
# preflight all-reduce. ~10 s on 2 cores.
set -euo pipefail
mpirun=(mpirun --oversubscribe --allow-run-as-root)
for n in 1 2 3 4; do
  "${mpirun[@]}" -np $n "$GPTRAIN_BIN/mpi_comm_check"
done
out=$("${mpirun[@]}" -np 4 "$GPTRAIN_BIN/gptrain_preflight" --tensor-model-parallel-size 2 --size-mb 1 --iters 2)
echo "$out"
grep -q "busbw" <<<"$out"
grep -q "world 4 = TP 2 x PP 1 x DP 2; rank 3 = (tp 1, dp 1, pp 0)" <<<"$out"
# A bad layout is refused with the flag's name, on every rank, without a hang.
if out=$(timeout 60 "${mpirun[@]}" -np 3 "$GPTRAIN_BIN/gptrain_preflight" --tensor-model-parallel-size 2 2>&1); then
  echo "expected failure for world 3 with TP 2"; exit 1
fi
grep -q "world size 3 is not divisible by --tensor-model-parallel-size 2" <<<"$out"
echo "collectives: ok"
