#!/usr/bin/env bash
# test_sanitized.sh — the tests again under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only):
# builds into build-asan (-O0 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined) the unit
# tests, the fuzz driver and the apps, then runs the unit tests, the fuzz pass (fewer inputs) and the
# integration tests that exercise the parsers and the training/checkpoint paths. Any sanitizer report
# fails the test that triggered it. Run by scripts/test.sh after the normal suite (GPTRAIN_SANITIZE=0
# there skips it).
#
#   scripts/test_sanitized.sh            # build + run
#   scripts/test_sanitized.sh -R resume  # extra arguments go to ctest
#   GPTRAIN_ASAN_STEP=build|test scripts/test_sanitized.sh   # one half (test.sh builds during the normal suite)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GPTRAIN_ASAN_BUILD_DIR:-build-asan}

step=${GPTRAIN_ASAN_STEP:-all}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -g1 (line tables) gives the same symbolized stacks as -g at a fraction of the compile time. -O0: with the
# sanitizers' instrumentation, -O1 doubled the compile time (35.6 against 17.8 s for a test file).
if [ "$step" != test ]; then
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" \
  -DGPTRAIN_CUDA=OFF -DGPTRAIN_SANITIZE=ON -DGPTRAIN_FUZZ_ITERATIONS="${GPTRAIN_ASAN_FUZZ_ITERATIONS:-300}" \
  "${launcher[@]}" >/dev/null
start=$(date +%s)
cmake --build "$build" -j "$(nproc)" --target unit_data unit_kernels unit_core unit_parallel fuzz_parsers \
  pretrain_gpt preprocess_data inspect_data merge_datasets convert_to_hf convert_from_hf
echo "test_sanitized: built in $(( $(date +%s) - start )) s"
fi
[ "$step" = build ] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# The integration tests that read user files (JSONL, .idx/.bin, vocab/merges, safetensors, config.json,
# checkpoints) and run the training loop with save/resume; the others repeat these paths at larger sizes.
integration="train_resume|save_read_only|train_result_checks|train_memory_plan|include_layers|dataset_inspect"
integration+="|dataset_index_memory|convert_gpt2_roundtrip|train_checkpoint_integrity|train_async_save|moe_train_resume"
start=$(date +%s)
cd "$build"
ctest --output-on-failure -j "${GPTRAIN_TEST_JOBS:-2}" -R "^(data|core|kernels|parallel|fuzz):|^integration: ($integration)\$" \
  "$@" || rc=$?
echo "test_sanitized: tests ran in $(( $(date +%s) - start )) s"
exit "${rc:-0}"
