#!/usr/bin/env bash
# The MoE MLP layer vs the dense MLP of the same active parameters, forward + backward on CPU, in one
# invocation (bench_moe_layer): 8 SwiGLU experts of width 512 top-2 vs a dense SwiGLU MLP of width 1024,
# C = 512, 1024 tokens. Prints tokens/s by wall time and by process CPU time (the latter is the fair
# measure on a machine shared with other jobs). ~10 s on 2 cores.
#   tests/bench/bench_moe_layer.sh [build/bin] [bench_moe_layer flags: --C --FE --B --T --reps]
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
shift || true
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -x "$bin/bench_moe_layer" ] || { echo "build it: cmake --build build --target bench_moe_layer" >&2; exit 1; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), OMP_NUM_THREADS=$OMP_NUM_THREADS"
"$bin/bench_moe_layer" "$@"
