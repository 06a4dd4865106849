#!/usr/bin/env bash
# CPU op benchmark at GPT-2 124M shapes (C=768, 12 heads, vocab 50304), micro-batch 4, T = 64, 256, 1024:
# GFLOP/s of the linear layers and causal attention, forward and backward, and the time of the
# memory-bound ops. Takes about 2-4 minutes on 2 cores. Usage: tests/bench/bench_cpu_ops.sh [build-dir]
# Threads: OMP_NUM_THREADS sets them all (default: every core). OpenBLAS is pinned to one thread by the
# CPU backend and GEMMs are split across the OpenMP threads, so OPENBLAS_NUM_THREADS has no effect.
# The "cpu GF/s" columns divide by process CPU time, which stays meaningful on a shared, loaded machine.
set -euo pipefail
build=${1:-${GPTRAIN_BUILD:-build}}
bin="$build/bin/bench_cpu_ops"
if [[ ! -x "$bin" ]]; then
  echo "bench_cpu_ops.sh: $bin not found; build it: cmake --build $build --target bench_cpu_ops" >&2
  exit 1
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')" \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --B 4 --T 64,256,1024 --reps "${REPS:-3}"
echo "# single thread (kernel efficiency without threading effects):"
OMP_NUM_THREADS=1 "$bin" --B 4 --T 64,1024 --reps "${REPS:-3}" --ops linear,attention
