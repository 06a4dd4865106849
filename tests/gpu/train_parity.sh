#!/usr/bin/env bash
# pretrain_gpt trains the same on the GPU as on the CPU twin: GPT-2, Llama (RoPE, RMSNorm, SwiGLU, GQA) and
# Mixtral-style MoE shapes on --mock-data, 8 iterations each, --device cpu against --device cuda in fp32
# (every iteration's lm loss within 1e-4 relative; the GPU's GEMMs and reductions sum in another order) and
# in bf16 (within 3e-2 of the fp32 CPU loss); recomputation and activation offloading on the GPU give the
# plain GPU run's losses; SGD and Muon (bf16-rounded and fp32 Newton-Schulz) in fp32 as on the CPU twin.
# Skips without a GPU or a CUDA build. ~1.5 min on one GPU.
set -euo pipefail
source "$GPTRAIN_SRC/tests/mpi/common.bash"  # max_rel_err
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] || { echo "SKIP: no GPU visible (nvidia-smi lists none)"; exit 77; }
bin=$GPTRAIN_BIN/pretrain_gpt

common=(--mock-data --vocab-size 4096 --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128
  --max-position-embeddings 128 --micro-batch-size 4 --global-batch-size 8 --train-iters 8 --log-interval 1
  --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --clip-grad 1.0
  --eval-iters 0 --seed 1234 --hidden-dropout 0 --attention-dropout 0)
llama=(--position-embedding-type rope --normalization RMSNorm --swiglu --ffn-hidden-size 512
  --group-query-attention --num-query-groups 2 --disable-bias-linear --untie-embeddings-and-output-weights)
moe=("${llama[@]}" --num-experts 8 --moe-router-topk 2 --moe-aux-loss-coeff 1e-2 --moe-z-loss-coeff 1e-3)

# losses LOG: "iter K loss X" of every training log line (the lines max_rel_err compares)
losses() { sed -n 's/.*iteration *\([0-9]*\)\/.*lm loss: \([0-9.E+-]*\).*/iter \1 loss \2/p' "$1"; }
# norms LOG: the grad norms as "iter K loss NORM" lines, for max_rel_err
norms() { sed -n 's/.*iteration *\([0-9]*\)\/.*grad norm: \([0-9.]*\).*/iter \1 loss \2/p' "$1"; }

run() {  # run NAME ARGS...: pretrain_gpt's log in $GPTRAIN_TMP/NAME.log, its losses in NAME.loss
  local name=$1
  shift
  if ! "$bin" "${common[@]}" "$@" > "$GPTRAIN_TMP/$name.log" 2>&1; then
    if grep -q "no CUDA backend" "$GPTRAIN_TMP/$name.log"; then
      echo "SKIP: this build has no CUDA backend"
      exit 77
    fi
    tail -20 "$GPTRAIN_TMP/$name.log"
    echo "train_parity: $name failed"
    exit 1
  fi
  case $name in  # the run really trained on the GPU: the backend's startup line names the device
    *cuda*) grep -q "cuda backend: " "$GPTRAIN_TMP/$name.log" || { cat "$GPTRAIN_TMP/$name.log"; echo "train_parity: $name: no cuda backend line"; exit 1; } ;;
  esac
  losses "$GPTRAIN_TMP/$name.log" > "$GPTRAIN_TMP/$name.loss"
  [ "$(wc -l < "$GPTRAIN_TMP/$name.loss")" = 8 ] || { cat "$GPTRAIN_TMP/$name.log"; echo "train_parity: $name: not 8 loss lines"; exit 1; }
}

compare() {  # compare REF OUT BOUND: max relative loss difference, fails above BOUND
  local err
  err=$(max_rel_err "$GPTRAIN_TMP/$1.loss" "$GPTRAIN_TMP/$2.loss")
  echo "$2 vs $1: max rel loss diff $err (bound $3); first/last: $(head -1 "$GPTRAIN_TMP/$2.loss") / $(tail -1 "$GPTRAIN_TMP/$2.loss")"
  awk -v e="$err" -v b="$3" 'BEGIN { exit !(e <= b) }' || { echo "train_parity: $2 differs from $1"; exit 1; }
}

for family in gpt2 llama moe; do
  case $family in
    gpt2) extra=() ;;
    llama) extra=("${llama[@]}") ;;
    moe) extra=("${moe[@]}") ;;
  esac
  run "$family-cpu" --device cpu "${extra[@]}"
  run "$family-cuda" --device cuda "${extra[@]}"
  run "$family-cuda-bf16" --device cuda --bf16 "${extra[@]}"
  compare "$family-cpu" "$family-cuda" 1e-4
  compare "$family-cpu" "$family-cuda-bf16" 3e-2
done
# The optimizers beyond AdamW on the GPU (fused SGD; Muon's momentum, Newton-Schulz through gemm_f32, its
# bf16-rounded iteration by default and fp32 with --muon-fp32-matmul-prec high) train as on the CPU twin in
# fp32: the losses within 1e-4 and the grad norms within 1e-2 (3 printed decimals; the grad norm moves with
# every step, where the mock data's loss barely does).
sgd=(--optimizer sgd --sgd-momentum 0.9 --lr 0.1 --min-lr 0.01)
muon=(--optimizer muon --lr 5e-3 --min-lr 5e-4)
for opt in sgd muon muon-fp32; do
  case $opt in
    sgd) extra=("${sgd[@]}") ;;
    muon) extra=("${muon[@]}") ;;
    muon-fp32) extra=("${muon[@]}" --muon-fp32-matmul-prec high) ;;
  esac
  run "gpt2-cpu-$opt" --device cpu "${extra[@]}"
  run "gpt2-cuda-$opt" --device cuda "${extra[@]}"
  compare "gpt2-cpu-$opt" "gpt2-cuda-$opt" 1e-4
  for d in cpu cuda; do norms "$GPTRAIN_TMP/gpt2-$d-$opt.log" > "$GPTRAIN_TMP/gpt2-$d-$opt-norm.loss"; done
  compare "gpt2-cpu-$opt-norm" "gpt2-cuda-$opt-norm" 1e-2
done
# Recomputation and activation offloading on the GPU change no bit of the run: the same losses to every
# printed digit as the plain fp32 GPU run (full and selective recomputation, the offload copy stream).
run gpt2-cuda-recompute-full --device cuda --recompute-granularity full --recompute-method uniform --recompute-num-layers 2
run gpt2-cuda-recompute-selective --device cuda --recompute-granularity selective
run gpt2-cuda-offload --device cuda --cpu-offloading --cpu-offloading-num-layers 2
for v in recompute-full recompute-selective offload; do compare gpt2-cuda "gpt2-cuda-$v" 0; done
echo "train_parity: ok"
