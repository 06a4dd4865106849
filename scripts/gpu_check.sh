#!/usr/bin/env bash
# gpu_check.sh — one command on a machine with an NVIDIA GPU: build Release for this GPU,
# run the GPU tests (every CUDA op vs its CPU twin, determinism), run compute-sanitizer on a short run,
# and print a benchmark table for GPT-2 124M / 350M / 1.5B at seq 1024 in bf16 with the largest
# micro-batch (from a short list) that fits, then a per-op table (bench_gpu_ops). Budget: under 10 minutes on one H100 (build ~3-4 min on
# 16 cores, tests ~1 min, sanitizer ~1 min, benchmarks ~3 min).
#
#   scripts/gpu_check.sh                 # everything
#   GPTRAIN_GPU_CHECK_SKIP_BENCH=1 ...   # build + tests + sanitizer only
#   GPTRAIN_BUILD_DIR=build-gpu          # build directory (default build-gpu)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GPTRAIN_BUILD_DIR:-build-gpu}
jobs=${GPTRAIN_BUILD_JOBS:-$(nproc)}
started=$(date +%s)
stamp() { echo "[gpu_check +$(( $(date +%s) - started ))s] $*"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi missing or failing): nothing to check here" >&2
  exit 77
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
stamp "GPU: $gpu_name (sm_$cc), driver $driver"

# ---- 1. configure + build Release for this GPU's architecture only ----
stamp "configure ($build, GPTRAIN_CUDA_ARCHS=$cc)"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPTRAIN_CUDA=ON -DGPTRAIN_CUDA_ARCHS="$cc" \
  "${launcher[@]}" >/dev/null
stamp "build (-j$jobs)"
cmake --build "$build" -j "$jobs" --target gpu_tests pretrain_gpt bench_gpu_ops
stamp "build done"

# ---- 2. GPU tests (label gpu): CUDA ops vs CPU twins, determinism, startup checks ----
stamp "ctest -L gpu"
(cd "$build" && OMP_NUM_THREADS=${OMP_NUM_THREADS:-8} ctest -L gpu --output-on-failure --timeout 300)
stamp "gpu tests passed"

# ---- 3. compute-sanitizer on a short run (memcheck, then racecheck on the attention kernels) ----
sanitizer=${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer
if [ -x "$sanitizer" ] || command -v compute-sanitizer >/dev/null 2>&1; then
  [ -x "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer)
  stamp "compute-sanitizer memcheck (elementwise, norms, matmul, xent, adamw, flash attention fp32, tensor-core attention)"
  "$sanitizer" --tool memcheck --error-exitcode 1 --print-limit 20 "$build/bin/gpu_tests" \
    "gpu add*,gpu layernorm*,gpu matmul*,gpu fused*,gpu flash attention fp32*,gpu embedding*,gpu tensor-core attention bf16/fp16 vs cpu twin" >/dev/null
  stamp "compute-sanitizer racecheck (flash attention bf16/fp16 shared-memory phases)"
  "$sanitizer" --tool racecheck --error-exitcode 1 --print-limit 20 "$build/bin/gpu_tests" \
    "gpu flash attention bf16/fp16 vs cpu" >/dev/null
  stamp "compute-sanitizer clean"
else
  stamp "compute-sanitizer not found: skipped (install the CUDA toolkit's sanitizer to run it)"
fi

[ "${GPTRAIN_GPU_CHECK_SKIP_BENCH:-0}" = 1 ] && { stamp "benchmarks skipped"; exit 0; }

# ---- 4. benchmark table: GPT-2 124M / 350M / 1.5B, seq 1024, bf16, mock data ----
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
if [ -f "$root/../shared/data/gpt2/vocab.json" ]; then
  vocab_args=(--vocab-file "$root/../shared/data/gpt2/vocab.json" --merge-file "$root/../shared/data/gpt2/merges.txt")
fi
bin="$build/bin/pretrain_gpt"
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

# run_one NAME LAYERS HIDDEN HEADS MBS -> prints "tokens/s TFLOP/s peak_MiB" or fails (e.g. out of memory)
run_one() {
  local name=$1 layers=$2 hidden=$3 heads=$4 mbs=$5 log="$logdir/$1-$5.log" mem="$logdir/$1-$5.mem"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$mem" 2>/dev/null &
  local smi=$!
  local rc=0
  timeout 150 "$bin" --device cuda --bf16 --mock-data "${vocab_args[@]}" \
    --num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads" \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size "$mbs" --global-batch-size "$mbs" --train-iters 12 --log-interval 4 \
    --lr 6e-4 --min-lr 6e-5 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --clip-grad 1.0 \
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

results=()
for spec in "GPT-2-124M 12 768 12 32 16 8" "GPT-2-350M 24 1024 16 16 8 4" "GPT-2-1.5B 48 1600 25 8 4 2"; do
  read -r name layers hidden heads mbs_list <<<"$spec"
  done_one=0
  for mbs in $mbs_list; do
    stamp "benchmark $name micro-batch $mbs"
    if out=$(run_one "$name" "$layers" "$hidden" "$heads" "$mbs"); then
      read -r tps tflops mem <<<"$out"
      results+=("$name|$mbs|$tps|$tflops|$mem")
      done_one=1
      break
    fi
    stamp "$name micro-batch $mbs did not run (last lines of its log):"
    tail -3 "$logdir/$name-$mbs.log" | sed 's/^/    /'
  done
  [ "$done_one" = 1 ] || results+=("$name|-|failed|-|-")
done

echo
echo "Benchmark: $gpu_name, driver $driver, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "pretrain_gpt --device cuda --bf16 --mock-data, seq 1024, global batch = micro-batch, iterations 9-12 of 12"
echo "MFU = TFLOP/s per GPU / ${peak} TFLOP/s dense bf16 peak; FLOP convention: $(grep -ho 'model FLOPs per iteration (.*)' "$logdir"/*.log 2>/dev/null | head -1)"
printf '| %-11s | %5s | %12s | %9s | %6s | %13s |\n' model mbs "tokens/s" "TFLOP/s" MFU "peak mem MiB"
printf '|%s|%s|%s|%s|%s|%s|\n' ------------- ------- -------------- ----------- -------- ---------------
for r in "${results[@]}"; do
  IFS='|' read -r name mbs tps tflops mem <<<"$r"
  mfu="-"
  if [ "$peak" != 0 ] && [ "$tflops" != "-" ] && [ -n "$tflops" ]; then
    mfu=$(awk -v t="$tflops" -v p="$peak" 'BEGIN { printf "%.1f%%", 100 * t / p }')
  fi
  printf '| %-11s | %5s | %12s | %9s | %6s | %13s |\n' "$name" "$mbs" "$tps" "$tflops" "$mfu" "$mem"
done

# ---- 5. per-op table (attention's own TFLOP/s per backend, GEMMs, memory-bound ops) ----
stamp "bench_gpu_ops: GPT-2 124M and 1.5B layer shapes, bf16"
"$build/bin/bench_gpu_ops" --B 8 --T 1024 --C 768 --heads 12 --reps 10 || echo "bench_gpu_ops (124M shapes) failed"
"$build/bin/bench_gpu_ops" --B 4 --T 1024 --C 1600 --heads 25 --reps 10 || echo "bench_gpu_ops (1.5B shapes) failed"
stamp "done"
