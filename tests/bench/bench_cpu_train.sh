#!/usr/bin/env bash
# CPU training throughput of pretrain_gpt (fp32, OpenMP + OpenBLAS) at micro-batch 4, seq 64, for
# GPT-2 124M and a 4-layer 256-wide model, against PyTorch training the same shape in the same
# invocation (tests/bench/torch_train_step.py: transformers' GPT2LMHeadModel, fp32, AdamW, same thread
# count). --mock-data, dropout off. Each run trains 11 iterations; gptrain's figure is the log line of
# iteration 10 (the mean of iterations 6-10), PyTorch's the mean of its steps 6-10. Numbers from a
# machine shared with other jobs are not reliable: run alone.
#   tests/bench/bench_cpu_train.sh [build/bin] [python]        ~3-6 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
py=${2:-${GPTRAIN_PYTHON:-.pyref/bin/python}}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
run() {  # name layers hidden heads
  local out
  out=$("$bin/pretrain_gpt" --num-layers "$2" --hidden-size "$3" --num-attention-heads "$4" --seq-length 64 \
    --max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 4 --train-iters 11 --lr 1e-4 \
    --mock-data --hidden-dropout 0 --attention-dropout 0 --log-interval 5 --eval-iters 0 --log-throughput \
    --device cpu)
  local line ms tps flops
  line=$(grep -E "iteration +10/" <<< "$out")
  ms=$(sed -E 's/.*elapsed time per iteration \(ms\): ([0-9.]+).*/\1/' <<< "$line")
  tps=$(sed -E 's/.*tokens per second: ([0-9.]+).*/\1/' <<< "$line")
  flops=$(grep -oE "count [0-9.e+]+ model FLOPs" <<< "$out" | awk '{print $2}')
  local ref
  ref=$("$py" "$here/torch_train_step.py" "$2" "$3" "$4" "$OMP_NUM_THREADS")
  awk -v n="$1" -v ms="$ms" -v tps="$tps" -v fl="$flops" -v ref="$ref" 'BEGIN {
    printf "| %-22s | %8.3f | %9.0f | %7.1f | %14.3f | %7.1fx |\n", n, ms / 1000, tps, fl / (ms / 1000) / 1e9, ref, ref / (ms / 1000) }'
}
# The load average before and after: a figure taken beside other jobs is not the machine's (run alone).
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "pretrain_gpt CPU training, micro-batch 4 x seq 64 (256 tokens/step), OMP_NUM_THREADS=$OMP_NUM_THREADS, $(nproc) cores"
echo "| model                  | s/step   | tokens/s  | GFLOP/s | PyTorch s/step | speed-up |"
echo "|------------------------|----------|-----------|---------|----------------|----------|"
run "GPT-2 124M (12x768)" 12 768 12
run "4 layers x 256" 4 256 4
echo "(GFLOP/s: Megatron's model-FLOPs formula, causal attention; PyTorch $("$py" -c 'import torch; print(torch.__version__)') measured in this run; load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg))"
