#!/usr/bin/env bash
# Every parallel layout gives the single-process losses: a tiny GPT-2 (tied embeddings, LayerNorm,
# learned positions) and a tiny Llama (RMSNorm, RoPE, SwiGLU, GQA, untied, no biases) trained 10
# iterations (dropout 0) under TP, PP, DP, their products, the interleaved pipeline, the distributed
# optimizer and sequence parallelism; per-iteration losses (and a forward-only evaluation loss after
# training) must match world 1 within 1e-6 relative. Then hidden and attention dropout 0.1 under TP 2
# (alone, with SP, with PP 2), PP 2 and DP 2: the masks follow the layer's head and the global row, not
# the rank, so the losses match world 1's with the same dropout just as closely. Pipeline layouts move
# activations and gradients in batched Isend/Irecv per schedule step, the code path NCCL groups take on
# GPUs. Prints each layout's measured error. ~1-2 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1)
layouts=(
  "2|--tensor-model-parallel-size 2"
  "2|--pipeline-model-parallel-size 2"
  "2|"
  "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
  "2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1"
  "4|--pipeline-model-parallel-size 4"
  "2|--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1"
  "2|--use-distributed-optimizer"
  "4|--use-distributed-optimizer"
  "2|--tensor-model-parallel-size 2 --sequence-parallel"
  "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer"
)
fail=0
# compare ARCH_FLAGS LAYOUT...: world 1 with ARCH_FLAGS, then each "NP|FLAGS" layout against it.
compare() {
  local model=$1
  shift
  # shellcheck disable=SC2086
  "$bin" $model "${common[@]}" > "$GPTRAIN_TMP/ref.txt"
  for spec in "$@"; do
    n=${spec%%|*}
    flags=${spec#*|}
    out=$GPTRAIN_TMP/out.txt
    # shellcheck disable=SC2086
    mpirun_n "$n" "$bin" $model "${common[@]}" $flags > "$out" 2>&1 || { cat "$out"; exit 1; }
    err=$(max_rel_err "$GPTRAIN_TMP/ref.txt" "$out")
    ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
    printf '%-26s np=%s %-100s max rel loss err %s %s\n' "$model" "$n" "${flags:-(data parallel)}" "$err" "$ok"
    [ "$ok" = ok ] || fail=1
  done
}
compare "--arch gpt2" "${layouts[@]}"
compare "--arch llama" "${layouts[@]}"
compare "--arch gpt2 --dropout 0.1" "2|--tensor-model-parallel-size 2" \
  "2|--tensor-model-parallel-size 2 --sequence-parallel" "2|--pipeline-model-parallel-size 2" "2|"
compare "--arch llama --dropout 0.1" "2|--tensor-model-parallel-size 2" \
  "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer"
exit $fail
