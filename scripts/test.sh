#!/usr/bin/env bash
# test.sh — the one test command: setup when needed, build, the slurm test's packages, Python references,
# then ctest with the labels unit, integration, mpi, slurm, gpu (GPU tests say why they skip without a
# GPU). Exits non-zero on any failure. Measured on 2 cores from a fresh clone with the CUDA files compiled
# (2026-11-23): 17.2 min with an empty compiler cache (build, Python references, tests ~4 min), 4.6 min
# with a warm one (257 tests; the 318 of the end of that day ran in 6.6 min in an up-to-date checkout).
#
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GPTRAIN_BUILD_DIR:-build}

if [ ! -f "$build/build.ninja" ]; then
  scripts/setup.sh
else
  GPTRAIN_SKIP_DEPS=1 scripts/setup.sh
fi

# The slurm test's daemons (Debian's Slurm and munge, ~15 s to install): not on a machine that has a Slurm
# of its own (sbatch without Debian's slurmd), nor with GPTRAIN_TEST_SLURM=0; the test then skips.
if [ "${GPTRAIN_TEST_SLURM:-1}" = 0 ]; then
  echo "test: GPTRAIN_TEST_SLURM=0: the slurm test will skip"
elif command -v sbatch > /dev/null && ! dpkg-query -W slurmd > /dev/null 2>&1; then
  echo "test: $(command -v sbatch) belongs to this machine's own Slurm: not installing Debian's; the slurm test will skip"
else
  scripts/install_packages.sh --optional "the slurm test" slurmctld slurmd slurm-client munge
fi

# Python references used by tests (independent implementations: HF tokenizers, transformers, torch).
scripts/python_refs.sh

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# Idle OpenMP threads sleep rather than spin: tests run two at a time on small machines.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cd "$build"
ctest --output-on-failure -j "${GPTRAIN_TEST_JOBS:-2}" "$@"
