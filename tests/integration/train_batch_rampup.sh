#!/usr/bin/env bash
# Batch-size ramp-up (--rampup-batch-size, --step-batch-size-schedule, --decrease-batch-size-if-needed):
# every iteration's global batch size, consumed samples and the iteration count follow Megatron's rule
# (transcribed in tests/python/batch_schedule_check.py); the first iterations at the start batch are
# bitwise those of a run with --global-batch-size START (same samples, LR by samples); a checkpoint is
# saved when the number of micro-batches changes (Megatron); resuming mid-ramp gives the uninterrupted
# run's losses bit for bit; the refusals name the flag. ~25 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN/pretrain_gpt
tmp=$GPTRAIN_TMP
py=${GPTRAIN_PYTHON:-python3}
check="$py $GPTRAIN_SRC/tests/python/batch_schedule_check.py"
rm -rf "$tmp" && mkdir -p "$tmp"
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
       --mock-data --vocab-size 97 --log-interval 1 --seed 7 --hidden-dropout 0.1 --attention-dropout 0.1
       --micro-batch-size 2 --lr 1e-2 --min-lr 1e-3 --lr-decay-style cosine)
# The LR schedule by samples, the same for every run below (the reference runs are shorter).
model+=(--lr-warmup-samples 8 --lr-decay-samples 80)
# 12 from 4 by 4 over 24 samples: batches 4, 4, 4, 8, 8, then 12; 5 ramp iterations + (80 - 28) // 12.
ramp=("${model[@]}" --train-samples 80 --global-batch-size 12 --rampup-batch-size 4 4 24 --eval-interval 3
      --eval-iters 1)

"$bin" "${ramp[@]}" --metrics-file "$tmp/straight.jsonl" > "$tmp/straight.log"
$check schedule "$tmp/straight.jsonl" --gbs 12 --mbs 2 --train-samples 80 --rampup 4 4 24
grep -q "ramping up batch size from 4 to 8" "$tmp/straight.log" || { echo "no ramp-up log line"; exit 1; }

# The first three iterations (batch 4) are those of a constant --global-batch-size 4 run over the same samples.
"$bin" "${model[@]}" --train-samples 12 --global-batch-size 4 --metrics-file "$tmp/const4.jsonl" > "$tmp/const4.log"
$check same "$tmp/straight.jsonl" "$tmp/const4.jsonl" 1 3

# Stop after iteration 4 (batch 8, mid-ramp); Megatron also saves when the micro-batches change (before 4).
"$bin" "${ramp[@]}" --save "$tmp/ck" --save-interval 100 --exit-interval 4 --metrics-file "$tmp/first.jsonl" \
  > "$tmp/first.log"
for it in 3 4; do
  [ -f "$tmp/ck/iter_000000$it/metadata.json" ] || { echo "no checkpoint at iteration $it"; ls "$tmp/ck"; exit 1; }
done
[ ! -d "$tmp/ck/iter_0000002" ] || { echo "unexpected checkpoint at iteration 2"; exit 1; }
$check same "$tmp/straight.jsonl" "$tmp/first.jsonl" 1 4
"$bin" "${ramp[@]}" --load "$tmp/ck" --metrics-file "$tmp/second.jsonl" > "$tmp/second.log"
$check same "$tmp/straight.jsonl" "$tmp/second.jsonl" 5 9
# Validation losses (iterations 6, 9 and the final one) too, digit for digit.
diff <(grep -E "validation loss at iteration [69]" "$tmp/straight.log") \
  <(grep -E "validation loss at iteration [69]" "$tmp/second.log")
# Resuming from the checkpoint the batch change wrote (iteration 3) continues the ramp as well.
"$bin" "${ramp[@]}" --load "$tmp/ck" --ckpt-step 3 --metrics-file "$tmp/third.jsonl" > "$tmp/third.log"
$check same "$tmp/straight.jsonl" "$tmp/third.jsonl" 4 9

# --decrease-batch-size-if-needed: 3, 6, 9, 12 run as 2, 6, 8, 12 (multiples of mbs 2); iterations by the
# un-rounded sizes.
"$bin" "${model[@]}" --train-samples 60 --global-batch-size 12 --rampup-batch-size 3 3 24 \
  --decrease-batch-size-if-needed --metrics-file "$tmp/decrease.jsonl" > "$tmp/decrease.log"
$check schedule "$tmp/decrease.jsonl" --gbs 12 --mbs 2 --train-samples 60 --rampup 3 3 24 --decrease
# Step schedule in tokens: 320 and 640 tokens of 16 = samples 20 and 40.
"$bin" "${model[@]}" --train-samples 80 --step-batch-size-schedule "0:4 320:8 640:12" \
  --metrics-file "$tmp/steps.jsonl" > "$tmp/steps.log"
$check schedule "$tmp/steps.jsonl" --gbs 12 --mbs 2 --train-samples 80 --steps "0:4 320:8 640:12" --seq-length 16

# The memory plan is for the largest batch.
"$bin" "${ramp[@]}" --dry-run > "$tmp/dry.log"
grep -q "up to 6 micro-batches" "$tmp/dry.log" || { echo "dry run does not plan 6 micro-batches"; cat "$tmp/dry.log"; exit 1; }

refused() {  # refused "message" flags...
  local want=$1
  shift
  if "$bin" "$@" > "$tmp/refused.log" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -qF -- "$want" "$tmp/refused.log" || { echo "expected '$want' in:"; cat "$tmp/refused.log"; exit 1; }
}
# With --train-iters (Megatron refuses the pair; its GPT-3 example passes it): that many iterations, each of
# the ramp's batch: n = 2 increments of 4 every 12 samples, then 12 once 24 samples are passed.
"$bin" "${model[@]:0:${#model[@]}-4}" --train-iters 10 --global-batch-size 12 --rampup-batch-size 4 4 24 \
  > "$tmp/iters.log" 2>&1 || { cat "$tmp/iters.log"; exit 1; }
got=$(grep -o "global batch size: *[0-9]*" "$tmp/iters.log" | awk '{print $4}' | tr '\n' ' ')
[ "$got" = "4 4 4 8 8 12 12 12 12 12 " ] || { echo "ramp with --train-iters: batches '$got'"; exit 1; }
grep -q "a pair Megatron refuses" "$tmp/iters.log" || { echo "no info line for ramp + --train-iters"; exit 1; }
refused "--step-batch-size-schedule needs sample-based training (--train-samples)" \
  "${model[@]:0:${#model[@]}-4}" --train-iters 10 --step-batch-size-schedule "0:4 320:8"
refused "--step-batch-size-schedule and --global-batch-size exclude each other" \
  "${model[@]}" --train-samples 80 --global-batch-size 12 --step-batch-size-schedule "0:4 320:12"
refused "global batch size 3 at 0 consumed samples (--rampup-batch-size) is not divisible" \
  "${model[@]}" --train-samples 60 --global-batch-size 12 --rampup-batch-size 3 3 24
echo "batch-size ramp-up: schedule, references, resume and refusals as expected"
