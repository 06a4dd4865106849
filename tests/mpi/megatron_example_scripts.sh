#!/usr/bin/env bash
# Megatron-LM's own launch scripts run with pretrain_gpt: their flag arrays are written below as the
# scripts have them (examples/gpt3/train_gpt3_175b_distributed.sh, examples/llama/train_llama3_8b_h100_fp8.sh,
# examples/academic_paper_scripts/sc21/CONFIG.sh with run_figure_14.sh, examples/mixtral/
# train_mixtral_8x7b_distributed.sh). For each:
#   1. full size, --dry-run: the whole command line is accepted and planned for the script's GPU count
#      (--device cuda, the script's precision), data and checkpoint paths checked;
#   2. shrunk (2 layers, small widths, a few iterations, TP/PP/DP to fit 2-4 CPU ranks) and launched with
#      mpirun instead of torchrun/srun, a real CPU run of the same flags. The CPU backend is fp32 only,
#      so --fp16/--bf16/--loss-scale and --attention-backend fused are the flags left out there.
# What the scripts need that gptrain does not have is refused by name: FP8 parameters (--fp8-param-gather in
# the llama script's DTYPE=fp8 branch); that branch's other FP8 flags run (planned and shrunk).
# ~2 min on 2 cores.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_TMP:?}"
source "$GPTRAIN_SRC/tests/mpi/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
P=$GPTRAIN_BIN/pretrain_gpt
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

# A corpus every checkout has: the repository's own text, one document per paragraph (enough documents
# for the scripts' 949,50,1 and 969,30,1 splits to leave every split non-empty). GPTRAIN_CORPUS_ROOT takes
# the text of another checkout instead, so that two builds compared loss for loss read the same corpus.
python3 - "${GPTRAIN_CORPUS_ROOT:-$GPTRAIN_SRC}" corpus.jsonl <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
files = sorted(p for d in ("docs", "core", "data", "parallel", "kernels", "apps") for p in (root / d).rglob("*")
               if p.suffix in (".md", ".h", ".cpp", ".cu"))
with open(sys.argv[2], "w") as out:
    for p in files + [root / "README.md"]:
        for para in p.read_text(errors="replace").split("\n\n"):
            if para.strip():
                out.write(json.dumps({"text": para}) + "\n")
PY
"$GPTRAIN_BIN/preprocess_data" --input corpus.jsonl --output-prefix my-gpt2 --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$GPTRAIN_SRC/data/gpt2/vocab.json" --merge-file "$GPTRAIN_SRC/data/gpt2/merges.txt" \
  --append-eod >/dev/null 2>&1
VOCAB_FILE=$GPTRAIN_SRC/data/gpt2/vocab.json
MERGE_FILE=$GPTRAIN_SRC/data/gpt2/merges.txt
DATA_PATH=$PWD/my-gpt2_text_document

# run NAME NP FLAGS...: mpirun -np NP pretrain_gpt FLAGS (NP 0: one process, no mpirun); log in NAME.log
run() {
  local name=$1 np=$2
  shift 2
  if [ "$np" = 0 ]; then "$P" "$@" >"$name.log" 2>&1; else mpirun_n "$np" "$P" "$@" >"$name.log" 2>&1; fi
}
# without FLAG... -- ARGS...: ARGS minus the listed flags and their values (value counts after a colon)
without() {
  local -A drop=()
  while [ "$1" != "--" ]; do drop[${1%%:*}]=${1#*:}; [ "${1#*:}" = "$1" ] && drop[$1]=0; shift; done
  shift
  local out=() skip=0
  for a in "$@"; do
    if [ "$skip" -gt 0 ]; then skip=$((skip - 1)); continue; fi
    if [ -n "${drop[$a]+x}" ]; then skip=${drop[$a]}; continue; fi
    out+=("$a")
  done
  printf '%s\0' "${out[@]}"
}
last_loss() { grep -o "lm loss: [0-9.E+-]*" "$1" | tail -1 | cut -d' ' -f3; }
iterations() { grep -c "| consumed samples:" "$1" || true; }

# ---------------------------------------------------------------- GPT-3 175B (examples/gpt3)
CHECKPOINT_PATH=$PWD/gpt3-ckpt
TENSORBOARD_LOGS_PATH=$PWD/gpt3-tb
GPT_MODEL_ARGS=(
  --num-layers 96
  --hidden-size 12288
  --num-attention-heads 96
  --seq-length 2048
  --max-position-embeddings 2048
  --attention-backend auto
)
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 1536
  --rampup-batch-size 16 16 5859375
  --train-iters 500000
  --weight-decay 0.1
  --adam-beta1 0.9
  --adam-beta2 0.95
  --init-method-std 0.006
  --clip-grad 1.0
  --fp16
  --lr 6.0e-5
  --lr-decay-style cosine
  --min-lr 6.0e-6
  --lr-warmup-fraction .001
  --lr-decay-iters 430000
)
MODEL_PARALLEL_ARGS=(
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 16
)
DATA_ARGS=(
  --data-path $DATA_PATH
  --vocab-file $VOCAB_FILE
  --merge-file $MERGE_FILE
  --split 949,50,1
)
EVAL_AND_LOGGING_ARGS=(
  --log-interval 100
  --save-interval 10000
  --eval-interval 1000
  --save $CHECKPOINT_PATH
  --load $CHECKPOINT_PATH
  --eval-iters 10
  --tensorboard-dir $TENSORBOARD_LOGS_PATH
)
GPT3=("${GPT_MODEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${MODEL_PARALLEL_ARGS[@]}" "${DATA_ARGS[@]}" "${EVAL_AND_LOGGING_ARGS[@]}")
# 128 GPUs (TP 8 x PP 16 x DP 1), as the script's parallel sizes need at least.
if run gpt3-dry 0 "${GPT3[@]}" --dry-run --device cuda --dry-run-world-size 128 &&
  grep -q "TP 8 x PP 16 x DP 1 = 128 processes" gpt3-dry.log && grep -q "up to 1536 micro-batches" gpt3-dry.log; then
  ok "gpt3 175B: full-size --dry-run on 128 GPUs"
else
  cat gpt3-dry.log; bad "gpt3 175B --dry-run"
fi
# Shrunk: 2 layers of width 64, batch ramp 2 -> 8 over 16 samples, 8 iterations, TP 2 x PP 2.
mapfile -d '' SMALL < <(without --fp16 --num-layers:1 --hidden-size:1 --num-attention-heads:1 --seq-length:1 \
  --max-position-embeddings:1 --global-batch-size:1 --rampup-batch-size:3 --train-iters:1 --lr-decay-iters:1 \
  --log-interval:1 --save-interval:1 --eval-interval:1 --eval-iters:1 --tensor-model-parallel-size:1 \
  --pipeline-model-parallel-size:1 -- "${GPT3[@]}")
SMALL+=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
  --global-batch-size 8 --rampup-batch-size 2 2 16 --train-iters 8 --lr-decay-iters 6 --log-interval 1
  --save-interval 4 --eval-interval 4 --eval-iters 2)
if run gpt3-small 4 "${SMALL[@]}"; then
  batches=$(grep -o "global batch size: *[0-9]*" gpt3-small.log | awk '{print $4}' | tr '\n' ' ')
  [ "$batches" = "2 2 2 4 4 6 8 8 " ] && [ -f "$CHECKPOINT_PATH/latest_checkpointed_iteration.txt" ] &&
    [ -n "$(ls "$TENSORBOARD_LOGS_PATH")" ] && ok "gpt3 175B shrunk, mpirun -np 4 (TP2 x PP2): batches $batches, loss $(last_loss gpt3-small.log)" ||
    { cat gpt3-small.log; bad "gpt3 shrunk: batches '$batches', checkpoint or TensorBoard missing"; }
else
  cat gpt3-small.log; bad "gpt3 shrunk run"
fi

# ---------------------------------------------------------------- Llama-3 8B (examples/llama, mock data)
CHECKPOINT_PATH=$PWD/llama3-ckpt
TENSORBOARD_LOGS_PATH=$PWD/llama3-tb
DATA_CACHE_PATH=$PWD/benchmark_cache_llama3_8b_fp8
mkdir -p "$DATA_CACHE_PATH"
TP_SIZE=1
CP_SIZE=1
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=128
NUM_LAYERS=32
SEQ_LENGTH=8192
MAX_POSITION_EMBEDDINGS=8192
MODEL_ARGS=(
  --use-mcore-models
  --num-layers $NUM_LAYERS
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 8
  --kv-channels 128
  --seq-length $SEQ_LENGTH
  --max-position-embeddings $MAX_POSITION_EMBEDDINGS
  --position-embedding-type rope
  --rotary-base 1000000
  --rotary-percent 1.0
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --swiglu
  --init-method-std 0.0134
  --attention-backend fused
  --apply-layernorm-1p
  --untie-embeddings-and-output-weights
  --disable-bias-linear
)
TRAINING_ARGS=(
  --micro-batch-size $MICRO_BATCH_SIZE
  --global-batch-size $GLOBAL_BATCH_SIZE
  --train-samples 1953125000
  --lr-decay-samples 1949218748
  --lr-warmup-samples 3906252
  --lr 0.00015
  --min-lr 0.00001
  --decoupled-lr 5.0e-4
  --decoupled-min-lr 4.5e-5
  --lr-decay-style cosine
  --clip-grad 1.0
  --weight-decay 0.1
  --adam-beta1 0.9
  --adam-beta2 0.95
  --bf16
  --grad-reduce-in-bf16
  --cross-entropy-loss-fusion
  --calculate-per-token-loss
  --manual-gc
  --empty-unused-memory-level 1
  --exit-duration-in-mins 235
)
DTYPE_ARGS=("--fp8-format hybrid" "--fp8-amax-history-len 1024" "--fp8-amax-compute-algo max" "--fp8-param-gather")
MODEL_PARALLEL_ARGS=(
  --tensor-model-parallel-size $TP_SIZE
  --context-parallel-size $CP_SIZE
  --sequence-parallel
)
DDP_ARGS=(
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
)
TRAINING_ARGS+=("${DDP_ARGS[@]}")
DATA_ARGS_LIST=(
  "--mock-data"
  "--tokenizer-type NullTokenizer"
  "--vocab-size 128256"
  "--data-cache-path ${DATA_CACHE_PATH}"
  "--tiktoken-pattern v2"
  "--split '99,1,0'"
  "--no-create-attention-mask-in-dataloader"
  "--no-mmap-bin-files"
  "--num-workers 1"
)
EVAL_AND_LOGGING_ARGS=(
  --log-interval 1
  --eval-iters 32
  --eval-interval 100
  --save-interval 1000
  --log-throughput
  --profile
  --profile-step-start 4
  --profile-step-end 6
  --ckpt-format torch_dist
  --distributed-timeout-minutes 60
  --save "$CHECKPOINT_PATH"
  --load "$CHECKPOINT_PATH"
  --tensorboard-dir "$TENSORBOARD_LOGS_PATH"
)
# The script expands its arrays unquoted: "--split '99,1,0'" becomes --split and '99,1,0', quotes included.
# shellcheck disable=SC2206
LLAMA=(${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]} ${DATA_ARGS_LIST[@]} ${EVAL_AND_LOGGING_ARGS[@]})
# shellcheck disable=SC2206
FP8=(${DTYPE_ARGS[@]})
if run llama3-fp8 0 "${LLAMA[@]}" "${FP8[@]}" --dry-run --device cuda --dry-run-world-size 8; then
  bad "llama3 with the script's DTYPE=fp8 arguments was accepted (--fp8-param-gather is not implemented)"
else
  grep -q "fp8-param-gather.*FP8 parameters" llama3-fp8.log &&
    ok "llama3 8B DTYPE=fp8: refused ($(grep -m1 -o 'fp8-param-gather[^;]*' llama3-fp8.log))" ||
    { cat llama3-fp8.log; bad "llama3 fp8 refusal does not name --fp8-param-gather"; }
fi
# The DTYPE=fp8 branch without --fp8-param-gather: FP8 GEMMs with delayed scaling (hybrid, history 1024, max).
FP8_GEMMS=()
for f in "${FP8[@]}"; do [ "$f" = --fp8-param-gather ] || FP8_GEMMS+=("$f"); done
if run llama3-fp8-dry 0 "${LLAMA[@]}" "${FP8_GEMMS[@]}" --dry-run --device cuda --dry-run-world-size 8 &&
  grep -q "DP 8 = 8 processes, distributed optimizer" llama3-fp8-dry.log; then
  ok "llama3 8B DTYPE=fp8 without --fp8-param-gather: full-size --dry-run on 8 GPUs"
else
  cat llama3-fp8-dry.log; bad "llama3 fp8 --dry-run"
fi
if run llama3-dry 0 "${LLAMA[@]}" --dry-run --device cuda --dry-run-world-size 8 &&
  grep -q "DP 8 = 8 processes, distributed optimizer" llama3-dry.log; then
  ok "llama3 8B (bf16 arguments): full-size --dry-run on 8 GPUs"
else
  cat llama3-dry.log; bad "llama3 --dry-run"
fi
# Shrunk: 2 layers, width 64 (4 query heads, 2 KV groups of 16), vocabulary 1000, 64 samples of 64 tokens
# in batches of 8, DP 2; the profile window (iterations 5-6) is kept.
mapfile -d '' SMALL < <(without --bf16 --attention-backend:1 --num-layers:1 --hidden-size:1 --ffn-hidden-size:1 \
  --num-attention-heads:1 --num-query-groups:1 --kv-channels:1 --seq-length:1 --max-position-embeddings:1 \
  --global-batch-size:1 --train-samples:1 --lr-decay-samples:1 --lr-warmup-samples:1 --vocab-size:1 \
  --eval-iters:1 --eval-interval:1 -- "${LLAMA[@]}")
SMALL+=(--num-layers 2 --hidden-size 64 --ffn-hidden-size 128 --num-attention-heads 4 --num-query-groups 2
  --kv-channels 16 --seq-length 64 --max-position-embeddings 64 --global-batch-size 8 --train-samples 64
  --lr-decay-samples 60 --lr-warmup-samples 8 --vocab-size 1000 --eval-iters 2 --eval-interval 4)
if run llama3-small 2 "${SMALL[@]}"; then
  [ "$(iterations llama3-small.log)" = 8 ] && grep -q "forward-backward" llama3-small.log &&
    ok "llama3 8B shrunk, mpirun -np 2 (DP2, distributed optimizer): 8 iterations, loss $(last_loss llama3-small.log), profile table printed" ||
    { cat llama3-small.log; bad "llama3 shrunk: iterations or profile table missing"; }
else
  cat llama3-small.log; bad "llama3 shrunk run"
fi
# (its own checkpoint directory: the script's --save/--load one holds the bf16 run's iteration 8)
if run llama3-fp8-small 2 "${SMALL[@]}" "${FP8_GEMMS[@]}" --save "$PWD/llama3-fp8-ckpt" --load "$PWD/llama3-fp8-ckpt"; then
  [ "$(iterations llama3-fp8-small.log)" = 8 ] &&
    ok "llama3 8B shrunk, DTYPE=fp8 without --fp8-param-gather, mpirun -np 2: 8 iterations, loss $(last_loss llama3-fp8-small.log)" ||
    { cat llama3-fp8-small.log; bad "llama3 fp8 shrunk: iterations missing"; }
else
  cat llama3-fp8-small.log; bad "llama3 fp8 shrunk run"
fi

# ---------------------------------------------------------------- sc21 (CONFIG.sh + run_figure_14.sh)
PP=2
GBS=32
DP=$((64 / PP))
TP=1
MBS=1
NLS=32
HS=3840
NAH=32
DDP=local
MEGATRON_EXTRA_PARAMS="--activations-checkpoint-method uniform "
MEGATRON_DATA=$DATA_PATH
BPE_VOCAB_FILE=$VOCAB_FILE
BPE_MERGE_FILE=$MERGE_FILE
sc21_params() {
  MEGATRON_PARAMS=" ${MEGATRON_EXTRA_PARAMS} \
	--tensor-model-parallel-size ${TP} \
	--pipeline-model-parallel-size ${PP} \
	--micro-batch-size ${MBS} \
	--global-batch-size ${GBS} \
        --num-layers ${NLS} \
        --hidden-size ${HS} \
        --num-attention-heads ${NAH} \
	--DDP-impl ${DDP} \
	--data-path ${MEGATRON_DATA} \
	--vocab-file ${BPE_VOCAB_FILE} \
	--merge-file ${BPE_MERGE_FILE} \
        --log-interval 5 \
        --seq-length 2048 \
        --max-position-embeddings 2048 \
        --train-iters 500 \
        --lr-decay-iters 320 \
        --lr 0.0001 \
	--min-lr 0.00001 \
        --lr-decay-style cosine \
        --lr-warmup-fraction 0.01 \
        --split 969,30,1 \
        --eval-iters 100 \
        --eval-interval 1000 \
        --clip-grad 1.0 \
        --fp16 \
	--loss-scale 8192 "
}
sc21_params
# shellcheck disable=SC2086
if run sc21-recompute 0 $MEGATRON_PARAMS --dry-run --device cuda --dry-run-world-size 64 &&
  grep -q "TP 1 x PP 2 x DP 32 = 64 processes" sc21-recompute.log &&
  grep -q "recompute full uniform 1" sc21-recompute.log; then
  ok "sc21 figure 14 (--activations-checkpoint-method uniform): full-size --dry-run on 64 GPUs plans full recomputation of every layer ($(grep -m1 -o 'activations [0-9.]* [MG]iB ([0-9]* micro-batches in flight, [0-9.]* [MG]iB each; recompute full uniform 1[^)]*)' sc21-recompute.log))"
else
  cat sc21-recompute.log; bad "sc21 with --activations-checkpoint-method uniform"
fi
MEGATRON_EXTRA_PARAMS=""
sc21_params
# shellcheck disable=SC2086
if run sc21-dry 0 $MEGATRON_PARAMS --dry-run --device cuda --dry-run-world-size 64 &&
  grep -q "TP 1 x PP 2 x DP 32 = 64 processes" sc21-dry.log; then
  ok "sc21 figure 14 (no extra params): full-size --dry-run on 64 GPUs"
else
  cat sc21-dry.log; bad "sc21 --dry-run"
fi
PP=2 GBS=8 NLS=2 HS=64 NAH=4
MEGATRON_EXTRA_PARAMS="--activations-checkpoint-method uniform "
sc21_params
# shellcheck disable=SC2086
mapfile -d '' SMALL < <(without --fp16 --loss-scale:1 --seq-length:1 --max-position-embeddings:1 --train-iters:1 \
  --lr-decay-iters:1 --eval-iters:1 --log-interval:1 --split:1 -- $MEGATRON_PARAMS)
SMALL+=(--seq-length 64 --max-position-embeddings 64 --train-iters 6 --lr-decay-iters 4 --eval-iters 2
  --log-interval 1 --split 90,10,0)
if run sc21-small 4 "${SMALL[@]}"; then
  [ "$(iterations sc21-small.log)" = 6 ] && ok "sc21 shrunk, mpirun -np 4 (PP2 x DP2, --DDP-impl local, --activations-checkpoint-method uniform): 6 iterations, loss $(last_loss sc21-small.log)" ||
    { cat sc21-small.log; bad "sc21 shrunk: iterations"; }
else
  cat sc21-small.log; bad "sc21 shrunk run"
fi

# ---------------------------------------------------------------- Mixtral 8x7B (examples/mixtral)
TOKENIZER_MODEL=$PWD/tokenizer.model
MIXTRAL=(--use-mcore-models --disable-bias-linear --seq-length 256 --max-position-embeddings 2048 --num-layers 2
  --hidden-size 256 --ffn-hidden-size 896 --num-attention-heads 2 --init-method-std 0.01 --attention-dropout 0.0
  --hidden-dropout 0.0 --normalization RMSNorm --position-embedding-type rope --swiglu
  --untie-embeddings-and-output-weights --group-query-attention --num-query-groups 2 --no-masked-softmax-fusion
  --no-position-embedding --rotary-base 1000000
  --num-experts 2 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2
  --moe-token-dispatcher-type alltoall --overlap-param-gather --overlap-grad-reduce
  --tokenizer-type Llama2Tokenizer --tokenizer-model ${TOKENIZER_MODEL} --mock-data --split 99990,8,2
  --micro-batch-size 1 --global-batch-size 4 --lr 1e-4 --train-iters 7 --min-lr 1.0e-5 --weight-decay 0.1
  --clip-grad 1.0 --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --expert-model-parallel-size 2
  --use-distributed-optimizer --sequence-parallel --eval-iters 10 --no-load-optim --no-load-rng)
# As the script is (its Llama2Tokenizer reads a SentencePiece model trained here on the corpus with PyPI
# sentencepiece), shrunk and launched on two ranks: EP 2, alltoall dispatcher, distributed optimizer
# (--sequence-parallel has no effect at TP 1).
if ! "${GPTRAIN_PYTHON:-python3}" - corpus.jsonl "${TOKENIZER_MODEL%.model}" <<'PY' >spm-train.log 2>&1; then
import json, sys
import sentencepiece as spm
texts = (json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8"))
spm.SentencePieceTrainer.train(sentence_iterator=texts, model_prefix=sys.argv[2], model_type="bpe", vocab_size=1000,
                               byte_fallback=True, character_coverage=1.0, minloglevel=2)
PY
  cat spm-train.log; bad "training the Mixtral script's SentencePiece model (PyPI sentencepiece at GPTRAIN_PYTHON)"
fi
if run mixtral 2 "${MIXTRAL[@]}" --log-interval 1; then
  [ "$(iterations mixtral.log)" = 7 ] && grep -q "load_balancing_loss" mixtral.log &&
    grep -q "expert parallelism: EP 2" mixtral.log &&
    ok "mixtral 8x7B shrunk, as written (Llama2Tokenizer), mpirun -np 2 (EP 2, alltoall dispatcher, distributed optimizer): 7 iterations, loss $(last_loss mixtral.log)" ||
    { cat mixtral.log; bad "mixtral: iterations, load_balancing_loss or the expert-parallel line"; }
else
  cat mixtral.log; bad "mixtral run"
fi

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "megatron_example_scripts: all ok"
