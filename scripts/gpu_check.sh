#!/usr/bin/env bash
# gpu_check.sh — one command on a machine with an NVIDIA GPU: build Release for this GPU,
# run the GPU tests (every CUDA op vs its CPU twin, determinism, a short training run of GPT-2, Llama and
# MoE shapes against the CPU twin, fp16 with dynamic loss scaling), print a benchmark table for GPT-2 124M /
# 350M / 1.5B at seq 1024 in bf16 with the largest micro-batch (from a short list) that fits, then a per-op
# table (bench_gpu_ops), and last run compute-sanitizer on the kernels. Budget: under 10 minutes on one
# H100 (build ~3-4 min on 16 cores, tests ~2-3 min, benchmarks ~3 min, sanitizer ~1 min).
#
#   scripts/gpu_check.sh                 # everything
#   GPTRAIN_GPU_CHECK_SKIP_BENCH=1 ...   # build + tests + sanitizer only
#   GPTRAIN_BUILD_DIR=build-gpu          # build directory (default build-gpu)
#   GPTRAIN_GPU_CHECK_BIN=DIR            # no build: use the gpu_tests, pretrain_gpt, mpi_train_check and
#                                        # bench_gpu_ops built elsewhere (e.g. on a login node) in DIR, with
#                                        # the build's lib/ (libgptrain_cuda.so, libgptrain_nccl.so) in DIR/../lib
#   GPTRAIN_GPU_CHECK_TESTS='SPEC'       # run only the gpu_tests cases this Catch2 test spec selects, e.g.
#                                        # 'gpu fused sgd*,gpu muon*' (default: every case)
#   GPTRAIN_GPU_CHECK_SCRIPTS='A B'      # run only these tests/gpu scripts, names without .sh, e.g.
#                                        # train_fp16_loss_scale; "none" for none (default: every script)
#   GPTRAIN_GPU_CHECK_SKIP_SANITIZER=1   # no compute-sanitizer pass (with the two above: only the tests named)
#   GPTRAIN_GPU_CHECK_KEEP_GOING=1       # go on to the benchmarks when a GPU test fails (exit status 1 at the end)
#   GPTRAIN_GPU_CHECK_TEST_TIMEOUT=600   # seconds for gpu_tests and for each gpu script test
#   GPTRAIN_GPU_CHECK_RUN_TIMEOUT=150    # seconds for each benchmark run
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GPTRAIN_BUILD_DIR:-build-gpu}
jobs=${GPTRAIN_BUILD_JOBS:-$(nproc)}
started=$(date +%s)
stamp() { echo "[gpu_check +$(( $(date +%s) - started ))s] $*"; }
work=$(mktemp -d)  # logs, test scratch and the baseline's output, removed at exit
trap 'rm -rf "$work"' EXIT

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi missing or failing): nothing to check here" >&2
  exit 77
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
stamp "GPU: $gpu_name (sm_$cc), driver $driver"

# ---- 1. configure + build Release for this GPU's architecture only (or take GPTRAIN_GPU_CHECK_BIN) ----
if [ -n "${GPTRAIN_GPU_CHECK_BIN:-}" ]; then
  bindir=$(cd "$GPTRAIN_GPU_CHECK_BIN" && pwd)
  for b in gpu_tests pretrain_gpt bench_gpu_ops; do
    [ -x "$bindir/$b" ] || { echo "gpu_check: GPTRAIN_GPU_CHECK_BIN=$bindir has no executable $b" >&2; exit 2; }
  done
  # The executables load the CUDA backend from ../lib (or their own folder).
  [ -f "$bindir/../lib/libgptrain_cuda.so" ] || [ -f "$bindir/libgptrain_cuda.so" ] ||
    { echo "gpu_check: no libgptrain_cuda.so in $bindir/../lib or $bindir (copy the build's lib/ beside bin/)" >&2; exit 2; }
  stamp "prebuilt binaries in $bindir: no build"
else
  stamp "configure ($build, GPTRAIN_CUDA_ARCHS=$cc)"
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPTRAIN_CUDA=ON -DGPTRAIN_CUDA_ARCHS="$cc" \
    "${launcher[@]}" >/dev/null
  stamp "build (-j$jobs)"
  cmake --build "$build" -j "$jobs" --target gpu_tests pretrain_gpt mpi_train_check bench_gpu_ops
  stamp "build done"
  bindir=$(cd "$build/bin" && pwd)
fi

# ---- 2. GPU tests: CUDA ops vs CPU twins, determinism, training against the CPU twin ----
# The test binary and the gpu script tests run directly (not through ctest), so that binaries built
# elsewhere, whose ctest files name another machine's paths, run the same way.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
shared=${GPTRAIN_SHARED:-$root/../shared}
failed=()
logtmp=$work/test.log
test_timeout=${GPTRAIN_GPU_CHECK_TEST_TIMEOUT:-600}  # seconds for gpu_tests and for each gpu script test
stamp "gpu_tests (every CUDA op against its CPU twin)"
gpu_tests() { GPTRAIN_SRC=$root GPTRAIN_BIN=$bindir GPTRAIN_SHARED=$shared timeout "$test_timeout" "$bindir/gpu_tests" "$@"; }
test_spec=()
[ -n "${GPTRAIN_GPU_CHECK_TESTS:-}" ] && test_spec=("$GPTRAIN_GPU_CHECK_TESTS")
rc=0
gpu_tests --durations yes "${test_spec[@]}" || rc=$?
if [ "$rc" -ge 124 ]; then
  # A crash or a hang ends the binary with every later test unrun: run each test case in its own process.
  stamp "gpu_tests ended with status $rc: each test case again in its own process"
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    trc=0
    gpu_tests "$name" > "$logtmp" 2>&1 || trc=$?
    [ "$trc" = 0 ] || { tail -30 "$logtmp"; failed+=("gpu_tests: $name (status $trc)"); }
  done < <("$bindir/gpu_tests" --list-test-names-only "${test_spec[@]}" | sed -e 's/^ *//' -e 's/[],[\\]/\\&/g')
elif [ "$rc" != 0 ]; then
  failed+=("gpu_tests")
fi
for t in tests/gpu/*.sh; do
  n=$(basename "$t" .sh)
  # GPTRAIN_GPU_CHECK_SCRIPTS: the named scripts only
  [ -z "${GPTRAIN_GPU_CHECK_SCRIPTS:-}" ] || [[ " $GPTRAIN_GPU_CHECK_SCRIPTS " == *" $n "* ]] || continue
  stamp "gpu: $n"
  rc=0
  GPTRAIN_SRC=$root GPTRAIN_BIN=$bindir GPTRAIN_SHARED=$shared GPTRAIN_TMP=$work/$n timeout "$test_timeout" bash "$t" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || failed+=("$n")
done
if [ "${#failed[@]}" -gt 0 ]; then
  stamp "GPU tests FAILED: ${failed[*]}"
  [ "${GPTRAIN_GPU_CHECK_KEEP_GOING:-0}" = 1 ] || exit 1
else
  stamp "gpu tests passed"
fi

# ---- 5. compute-sanitizer on the kernels (memcheck, then racecheck on the attention kernels): run last, by finish ----
# memcheck: elementwise (squared ReLU too), norms, matmul, fused ops (SGD among them), fp32 flash attention,
# embedding, tensor-core attention, MoE (input jitter too), Muon's steps, gemm_f32 and copy_2d_f32;
# racecheck: the shared-memory phases of the bf16/fp16 flash attention.
sanitizer_memcheck_tests="gpu add*,gpu layernorm*,gpu matmul*,gpu fused*,gpu flash attention fp32*,gpu embedding*,gpu tensor-core attention bf16/fp16 vs cpu twin,gpu moe*,gpu squared relu*,gpu muon*,gpu gemm_f32*,gpu copy_2d_f32*"
sanitizer_racecheck_tests="gpu flash attention bf16/fp16 vs cpu"
run_sanitizer() {
  local sanitizer=${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer log rc
  if [ "${GPTRAIN_GPU_CHECK_SKIP_SANITIZER:-0}" = 1 ]; then
    stamp "compute-sanitizer skipped (GPTRAIN_GPU_CHECK_SKIP_SANITIZER=1)"
    return 0
  fi
  [ -x "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer || true)
  if [ -z "$sanitizer" ]; then
    stamp "compute-sanitizer not found: skipped (install the CUDA toolkit's sanitizer to run it)"
    return 0
  fi
  log=$work/sanitizer.log
  # tool, then the gpu_tests test specs it runs: its report lines ("=========") are printed, the tests' own output is not
  for check in "memcheck|$sanitizer_memcheck_tests" "racecheck|$sanitizer_racecheck_tests"; do
    stamp "compute-sanitizer ${check%%|*} (${check#*|})"
    rc=0
    "$sanitizer" --tool "${check%%|*}" --error-exitcode 1 --print-limit 20 "$bindir/gpu_tests" "${check#*|}" >"$log" 2>&1 || rc=$?
    grep '^=========' "$log" | head -60 || true
    [ "$rc" = 0 ] || { tail -5 "$log"; stamp "compute-sanitizer ${check%%|*} FAILED (exit $rc)"; exit 1; }
  done
  stamp "compute-sanitizer clean"
}
# The sanitizer, then the exit status: non-zero when a GPU test failed (GPTRAIN_GPU_CHECK_KEEP_GOING).
finish() {
  run_sanitizer
  stamp "done"
  [ "${#failed[@]}" = 0 ] || { echo "gpu_check: GPU tests failed: ${failed[*]}" >&2; exit 1; }
  exit 0
}
[ "${GPTRAIN_GPU_CHECK_SKIP_BENCH:-0}" = 1 ] && { stamp "benchmarks skipped"; finish; }

# ---- 3. benchmark table: GPT-2 124M / 350M / 1.5B, seq 1024, bf16, mock data ----
# MFU = achieved model TFLOP/s per GPU (pretrain_gpt --log-throughput; its FLOP convention is named in
# its "TFLOP/s count" header line, core/metrics/flops.h: Megatron's num_floating_point_operations,
# no recompute FLOPs) / dense bf16 peak of this GPU.
case "$gpu_name" in
  *H100*PCIe*) peak=756 ;;
  *H100*NVL*) peak=835 ;;
  *H100*|*H200*|*GH200*) peak=989 ;;
  *A100*) peak=312 ;;
  *L40S*) peak=362 ;;
  *) peak=0 ;;
esac
vocab_args=()
if [ -f "$root/data/gpt2/vocab.json" ]; then  # the GPT-2 vocabulary shipped with gptrain: 50257 tokens
  vocab_args=(--vocab-file "$root/data/gpt2/vocab.json" --merge-file "$root/data/gpt2/merges.txt")
fi
bin="$bindir/pretrain_gpt"
logdir=$work/bench
mkdir -p "$logdir"

# run_one NAME LAYERS HIDDEN HEADS MBS DROPOUT -> prints "tokens/s TFLOP/s peak_MiB" or fails (e.g. out of memory)
run_one() {
  local name=$1 layers=$2 hidden=$3 heads=$4 mbs=$5 dropout=$6 log="$logdir/$1-$5-$6.log" mem="$logdir/$1-$5-$6.mem"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$mem" 2>/dev/null &
  local smi=$!
  local rc=0
  timeout "${GPTRAIN_GPU_CHECK_RUN_TIMEOUT:-150}" "$bin" --device cuda --bf16 --mock-data "${vocab_args[@]}" \
    --num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads" \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size "$mbs" --global-batch-size "$mbs" --train-iters 12 --log-interval 4 \
    --lr 6e-4 --min-lr 6e-5 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --clip-grad 1.0 \
    --attention-dropout "$dropout" --hidden-dropout "$dropout" \
    --eval-iters 0 --seed 1234 --log-throughput >"$log" 2>&1 || rc=$?
  kill "$smi" 2>/dev/null || true
  wait "$smi" 2>/dev/null || true
  [ "$rc" = 0 ] || return 1
  # the last log line covers iterations 9-12 (past warm-up and the first-use plan builds)
  local line tps tflops peakmem
  line=$(grep "throughput per GPU" "$log" | tail -1) || return 1
  tflops=$(sed -n 's/.*throughput per GPU (TFLOP\/s\/GPU): \([0-9.]*\).*/\1/p' <<<"$line")
  tps=$(sed -n 's/.*tokens per second: \([0-9.]*\).*/\1/p' <<<"$line")
  if [ -z "$tps" ]; then
    local ms
    ms=$(sed -n 's/.*elapsed time per iteration (ms): \([0-9.]*\).*/\1/p' <<<"$line")
    tps=$(awk -v m="$mbs" -v ms="$ms" 'BEGIN { printf "%.0f", m * 1024 / (ms / 1000) }')
  fi
  peakmem=$(sort -n "$mem" | tail -1)
  echo "$tps $tflops ${peakmem:-?}"
}

# Dropout 0.1 is Megatron's default (attention dropout runs in gptrain's own flash kernels: cuDNN's dropout
# RNG is not gptrain's); dropout 0 is the usual setting of Llama-style runs and lets cuDNN's fused
# attention run.
results=()
runs=()  # model:mbs, for the PyTorch baseline
for dropout in 0.1 0; do
  for spec in "124M 12 768 12 32 16 8" "350M 24 1024 16 16 8 4" "1.5B 48 1600 25 8 4 2"; do
    read -r name layers hidden heads mbs_list <<<"$spec"
    done_one=0
    for mbs in $mbs_list; do
      stamp "benchmark GPT-2-$name micro-batch $mbs dropout $dropout"
      if out=$(run_one "$name" "$layers" "$hidden" "$heads" "$mbs" "$dropout"); then
        read -r tps tflops mem <<<"$out"
        results+=("$name|$mbs|$dropout|$tps|$tflops|$mem")
        [ "$dropout" = 0 ] && runs+=("$name:$mbs")
        done_one=1
        break
      fi
      stamp "GPT-2-$name micro-batch $mbs did not run (last lines of its log):"
      tail -3 "$logdir/$name-$mbs-$dropout.log" | sed 's/^/    /'
    done
    [ "$done_one" = 1 ] || results+=("$name|-|$dropout|failed|-|-")
  done
done

# The PyTorch baseline in the same invocation (transformers' GPT2LMHeadModel, bf16 autocast, fused AdamW):
# eager at both dropouts, torch.compile at dropout 0. GPTRAIN_GPU_CHECK_TORCH=eager skips compile, =none all.
torch_modes=${GPTRAIN_GPU_CHECK_TORCH:-eager,compile}
baseline="$logdir/torch.txt"
: >"$baseline"
# PyTorch runs with the library path it was installed for: LD_LIBRARY_PATH may name the CUDA libraries
# gptrain was built against (another cuDNN than torch's own, which torch refuses), so it is left out
# unless torch cannot start without it.
torch_py=()
if [ "$torch_modes" != none ] && [ "${#runs[@]}" -gt 0 ]; then
  for py in "env -u LD_LIBRARY_PATH python3" python3; do
    # shellcheck disable=SC2086
    if $py -c 'import torch, transformers; assert torch.cuda.is_available()' >/dev/null 2>&1; then
      read -r -a torch_py <<<"$py"
      break
    fi
  done
fi
if [ "${#torch_py[@]}" -gt 0 ]; then
  run_list=$(IFS=,; echo "${runs[*]}")
  stamp "PyTorch baseline ($run_list): eager, dropout 0.1"
  timeout 600 "${torch_py[@]}" "$root/tests/bench/bench_gpu_torch.py" --runs "$run_list" --dropout 0.1 --modes eager \
    >>"$baseline" 2>&1 || true
  stamp "PyTorch baseline: ${torch_modes}, dropout 0"
  timeout 900 "${torch_py[@]}" "$root/tests/bench/bench_gpu_torch.py" --runs "$run_list" --dropout 0 --modes "$torch_modes" \
    >>"$baseline" 2>&1 || true
  if grep -q '^BASELINE' "$baseline"; then
    grep '^#' "$baseline" | head -1 || true
  else
    echo "PyTorch baseline did not run (last lines of its output):"
    tail -5 "$baseline" | sed 's/^/    /'
  fi
else
  stamp "PyTorch baseline skipped (GPTRAIN_GPU_CHECK_TORCH=$torch_modes, or python3 without CUDA torch + transformers)"
fi
# torch_tps MODEL MBS DROPOUT MODE -> the baseline's tokens/s, or "-"
torch_tps() { awk -v n="$1" -v m="$2" -v d="$3" -v mode="$4" '$1 == "BASELINE" && $2 == n && $3 == m && $4 + 0 == d + 0 && $5 == mode { v = $6 } END { print (v == "" ? "-" : v) }' "$baseline"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }

echo
echo "Benchmark: $gpu_name, driver $driver, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "pretrain_gpt --device cuda --bf16 --mock-data, seq 1024, global batch = micro-batch, iterations 9-12 of 12"
echo "MFU = TFLOP/s per GPU / ${peak} TFLOP/s dense bf16 peak; FLOP convention: $(grep -ho 'model FLOPs per iteration (.*)' "$logdir"/*.log 2>/dev/null | head -1)"
echo "PyTorch columns: tests/bench/bench_gpu_torch.py in this run, same model, micro-batch and dropout; x = gptrain / PyTorch"
printf '| %-10s | %3s | %7s | %10s | %7s | %6s | %8s | %18s | %18s |\n' model mbs dropout "tokens/s" "TFLOP/s" MFU "peak MiB" "PyTorch eager" "torch.compile"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ------------ ----- --------- ------------ --------- -------- ---------- -------------------- --------------------
for r in "${results[@]}"; do
  IFS='|' read -r name mbs dropout tps tflops mem <<<"$r"
  mfu="-"
  if [ "$peak" != 0 ] && [ "$tflops" != "-" ] && [ -n "$tflops" ]; then
    mfu=$(awk -v t="$tflops" -v p="$peak" 'BEGIN { printf "%.1f%%", 100 * t / p }')
  fi
  eager=$(torch_tps "$name" "$mbs" "$dropout" eager)
  compiled="-"
  [ "$dropout" = 0 ] && compiled=$(torch_tps "$name" "$mbs" "$dropout" compile)
  printf '| %-10s | %3s | %7s | %10s | %7s | %6s | %8s | %18s | %18s |\n' "GPT-2 $name" "$mbs" "$dropout" "$tps" "$tflops" "$mfu" "$mem" \
    "$eager ($(ratio "$tps" "$eager"))" "$compiled ($(ratio "$tps" "$compiled"))"
done
grep 'BASELINE.*\(oom\|error\)' "$baseline" | sed 's/^/  baseline did not run: /' || true

# ---- 4. per-op table (attention's own TFLOP/s per backend, GEMMs, memory-bound ops) ----
stamp "bench_gpu_ops: GPT-2 124M and 1.5B layer shapes, bf16 (the first also FP8 vs bf16 GEMMs at 4096^3 and 8192^3)"
"$bindir/bench_gpu_ops" --B 8 --T 1024 --C 768 --heads 12 --reps 10 || echo "bench_gpu_ops (124M shapes) failed"
"$bindir/bench_gpu_ops" --B 4 --T 1024 --C 1600 --heads 25 --reps 10 --square-gemms 0 || echo "bench_gpu_ops (1.5B shapes) failed"
finish
