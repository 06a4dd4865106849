#!/usr/bin/env bash
# CPU backend benchmark at GPT-2 shapes. Part 1: whole training steps built from the Backend ops
# (bench_cpu_step) for GPT-2 124M and a 4-layer 256-wide model at micro-batch 4, seq 64 (the
# shapes of the CPU speed target against llm.c's fp32 train_gpt2.c, which bench_cpu_train.sh runs).
# Part 2: GFLOP/s of the linear layers and causal attention (C=768, 12 heads, vocab 50304), forward and
# backward, at T = 64, 256, 1024, and the time of the memory-bound ops (bench_cpu_ops).
# Takes about 3-6 minutes on 2 cores. Usage: tests/bench/bench_cpu_ops.sh [build-dir]
# Threads: OMP_NUM_THREADS sets them all (default: every core). OpenBLAS is pinned to one thread by the
# CPU backend and GEMMs are split across the OpenMP threads, so OPENBLAS_NUM_THREADS has no effect.
# OMP_WAIT_POLICY=passive (the default here) makes idle OpenMP threads sleep instead of spinning: on a
# machine shared with other jobs spinning threads steal the cores their partners need (measured on the
# 2-core dev box under load 15: 4-layer step 2.8 s active vs 1.3-1.7 s passive); on an idle machine
# the difference is a few milliseconds per step.
# The "process CPU time" / "cpu GF/s" figures divide by CPU time, which stays meaningful under load.
set -euo pipefail
build=${1:-${GPTRAIN_BUILD:-build}}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
for b in bench_cpu_step bench_cpu_ops; do
  if [[ ! -x "$build/bin/$b" ]]; then
    echo "bench_cpu_ops.sh: $build/bin/$b not found; build it: cmake --build $build --target $b" >&2
    exit 1
  fi
done
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')" \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
     "OMP_NUM_THREADS=${OMP_NUM_THREADS:-all} OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
"$build/bin/bench_cpu_step" --layers 12 --C 768 --heads 12 --B 4 --T 64 --steps 3
"$build/bin/bench_cpu_step" --layers 4 --C 256 --heads 4 --B 4 --T 64 --steps 3
"$build/bin/bench_cpu_ops" --B 4 --T 64,256,1024 --reps "${REPS:-3}"
