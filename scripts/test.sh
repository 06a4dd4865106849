#!/usr/bin/env bash
# test.sh — the one test command: setup when needed, build, the slurm test's packages, Python references,
# then ctest with the labels unit, integration, mpi, slurm, gpu (GPU tests say why they skip without a
# GPU), fuzz, then the sanitizer pass. Exits non-zero on any failure. Measured on 2 cores from a fresh clone
# with the CUDA files compiled, the compiler cache off and the packages installed (2026-11-27): 28.7 min
# (build ~11 min, 440 tests 13.5 min, the sanitizer build overlapping them and ~1.5 min more, its tests 2.6 min).
#
#   scripts/test.sh              # everything, then the sanitizer pass (scripts/test_sanitized.sh)
#   scripts/test.sh -L unit      # extra arguments go to ctest (no sanitizer pass unless GPTRAIN_SANITIZE=1)
#   GPTRAIN_SANITIZE=0 scripts/test.sh   # skip the sanitizer pass
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
# Then the unit, fuzz and parser/training integration tests again under ASan + UBSan (CPU build in
# build-asan). On by default for the whole suite (CI); GPTRAIN_SANITIZE=0 skips it, GPTRAIN_SANITIZE=1
# runs it also after a filtered run (scripts/test.sh -L unit). Its build runs during the normal suite at
# the lowest CPU priority: most tests wait (MPI start-up, daemons, timeouts), and the build takes those
# idle cycles instead of adding ~8 min of its own.
sanitize=${GPTRAIN_SANITIZE:-auto}
asan=0
if [ "$sanitize" = 1 ] || { [ "$sanitize" = auto ] && [ $# -eq 0 ]; }; then
  asan=1
  GPTRAIN_ASAN_STEP=build nice -n 19 scripts/test_sanitized.sh > "$build/asan-build.log" 2>&1 &
  asan_build=$!
fi

cd "$build"
rc=0
ctest --output-on-failure -j "${GPTRAIN_TEST_JOBS:-2}" "$@" || rc=$?
cd "$root"

if [ "$asan" = 1 ]; then
  if wait "$asan_build"; then
    tail -1 "$build/asan-build.log"
    GPTRAIN_ASAN_STEP=test scripts/test_sanitized.sh || rc=1
  else
    tail -30 "$build/asan-build.log"
    echo "test: the sanitizer build failed (log above: $build/asan-build.log)"
    rc=1
  fi
fi
exit "$rc"
