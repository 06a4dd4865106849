#!/usr/bin/env bash
# Records the losses of every training run the integration and mpi tests start, for comparing two builds
# bit for bit (a refactoring must not change a single loss). pretrain_gpt and mpi_train_check in BUILD/bin
# are wrapped for the duration: each run's command line, rank, log and (for pretrain_gpt, when the test
# does not set one) a --metrics-file with full-precision losses land in OUT; then the binaries are put
# back. Compare two captures with compare_losses.py. ~5-8 min on 2 cores.
#
#   tests/tools/capture_losses.sh build /tmp/losses-before      # then change, rebuild, capture again:
#   tests/tools/capture_losses.sh build /tmp/losses-after
#   python3 tests/tools/compare_losses.py /tmp/losses-before /tmp/losses-after
# Further arguments go to ctest (e.g. -R 'family|layouts' for a subset).
set -euo pipefail
build=$(cd "${1:?build directory}" && pwd)
out=${2:?output directory}
shift 2
mkdir -p "$out" && out=$(cd "$out" && pwd)
# The build's source tree, which compare_losses.py masks: two checkouts' runs name their own data/ and presets.
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" > "$out/SOURCE"
bin=$build/bin
restore() {
  for b in pretrain_gpt mpi_train_check; do [ -f "$bin/.real/$b" ] && mv -f "$bin/.real/$b" "$bin/$b"; done
  rmdir "$bin/.real" 2>/dev/null || true
}
# One capture per build at a time: a second one would wrap the first one's wrappers (each calling the next
# without end) and restore binaries under the first. mkdir is the lock.
if ! mkdir "$bin/.real" 2>/dev/null; then
  echo "capture_losses: $bin/.real exists: another capture is running on this build (or one was killed:" \
    "move its binaries from $bin/.real back first)" >&2
  exit 1
fi
trap restore EXIT
for b in pretrain_gpt mpi_train_check; do
  mv "$bin/$b" "$bin/.real/$b"
  cat > "$bin/$b" <<EOS
#!/usr/bin/env bash
set -o pipefail
log="$out/\$(date +%s%N)-\$\$.log"
{ printf 'ARGS:'; printf ' %q' "\$@"; printf '\nRANK: %s of %s\n' "\${OMPI_COMM_WORLD_RANK:-}" "\${OMPI_COMM_WORLD_SIZE:-1}"; } > "\$log"
extra=()
if [ "$b" = pretrain_gpt ]; then
  case " \$* " in *" --metrics-file"*|*" --config"*|*" --dry-run"*|*" --help"*|*" --list-flags"*) ;; *) extra=(--metrics-file "\$log.jsonl") ;; esac
fi
"$bin/.real/$b" "\$@" "\${extra[@]}" 2> >(tee -a "\$log" >&2) | tee -a "\$log"
rc=\${PIPESTATUS[0]}
wait
exit \$rc
EOS
  chmod +x "$bin/$b"
done
cd "$build"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
  ctest -L 'integration|mpi' -E 'flags_reach_consumers' -j "${GPTRAIN_TEST_JOBS:-2}" "$@" || true
echo "capture_losses: $(ls "$out"/*.log | wc -l) runs recorded in $out"
