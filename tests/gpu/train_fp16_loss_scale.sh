#!/usr/bin/env bash
# --fp16 training on the GPU with Megatron's dynamic loss scaling, against the CPU twin. GPT-2 shape on
# --mock-data, 32 iterations from --initial-loss-scale 2^32 (Megatron's default; --hysteresis 2,
# --loss-scale-window 4): the first iterations overflow in fp16 (the scaled loss gradient alone is past
# 65504) and are skipped, the first overflow only spends the hysteresis credit, later ones halve the scale,
# 4 clean iterations double it. Checked: every iteration's logged loss scale equals Megatron's
# DynamicGradScaler rule replayed over the run's own overflow sequence, iterations 1 and 2 overflow, and the
# run shows a held overflow, a backoff and a growth. The CPU twin computes in fp32 only (it refuses --fp16),
# so its reference is the fp32 run with --iterations-to-skip set to the GPU's skipped iterations (the same
# batches consumed without a step, the LR schedule held alike). Each trained iteration's lm loss within 2e-3
# relative (bf16 came within 1.5e-4 of fp32 in train_parity.sh's GPU run, fp16 has the finer mantissa; on
# mock data the loss barely moves, so a looser bound would pass any model), the grad norm (unscaled) within
# 1e-2 at the first trained iteration (the same weights on both) and 2e-2 after: a wrong unscale is off by a
# power of 2, which AdamW and clipping hide from the losses. A second run with --min-loss-scale 2^28, where
# every iteration overflows, holds the scale at the floor. Skips without a GPU or a CUDA build. ~30 s on one
# GPU (most of it the CPU twin's iterations).
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] || { echo "SKIP: no GPU visible (nvidia-smi lists none)"; exit 77; }
bin=$GPTRAIN_BIN/pretrain_gpt

common=(--mock-data --vocab-size 4096 --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128
  --max-position-embeddings 128 --micro-batch-size 4 --global-batch-size 8 --log-interval 1
  --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --clip-grad 1.0
  --eval-iters 0 --seed 1234 --hidden-dropout 0 --attention-dropout 0)
initial=4294967296 window=4 hysteresis=2
scaler=(--fp16 --initial-loss-scale "$initial" --loss-scale-window "$window" --hysteresis "$hysteresis")

run() {  # run NAME ARGS...: pretrain_gpt's log in $GPTRAIN_TMP/NAME.log, its lines in NAME.lines
  local name=$1
  shift
  if ! "$bin" "${common[@]}" "$@" > "$GPTRAIN_TMP/$name.log" 2>&1; then
    if grep -q "no CUDA backend" "$GPTRAIN_TMP/$name.log"; then
      echo "SKIP: this build has no CUDA backend"
      exit 77
    fi
    tail -20 "$GPTRAIN_TMP/$name.log"
    echo "train_fp16_loss_scale: $name failed"
    exit 1
  fi
  case $name in  # the run really trained on the GPU: the backend's startup line names the device
    *cuda*) grep -q "cuda backend: " "$GPTRAIN_TMP/$name.log" || { cat "$GPTRAIN_TMP/$name.log"; echo "train_fp16_loss_scale: $name: no cuda backend line"; exit 1; } ;;
  esac
  lines "$GPTRAIN_TMP/$name.log" > "$GPTRAIN_TMP/$name.lines"
}

# lines LOG: "ITERATION LOSS_SCALE SKIPPED LM_LOSS GRAD_NORM" per training line (GRAD_NORM - when not logged)
lines() {
  awk -F'|' '/ iteration +[0-9]+\/ *[0-9]+ \|/ {
    it = $1; sub(/.* iteration +/, "", it); sub(/\/.*/, "", it)
    scale = "-"; skipped = "-"; loss = "-"; norm = "-"
    for (i = 2; i <= NF; i++) {
      f = $i
      if (f ~ /^ loss scale: /) { sub(/^ loss scale: /, "", f); scale = f + 0 }
      else if (f ~ /^ number of skipped iterations: /) { sub(/^ number of skipped iterations: */, "", f); skipped = f + 0 }
      else if (f ~ /^ lm loss: /) { sub(/^ lm loss: /, "", f); loss = f + 0 }
      else if (f ~ /^ grad norm: /) { sub(/^ grad norm: /, "", f); norm = f + 0 }
    }
    printf "%d %.17g %s %s %s\n", it, scale, skipped, loss, norm
  }' "$1"
}

fail() { echo "train_fp16_loss_scale: $*"; exit 1; }

# replay LINES INITIAL MIN: Megatron's DynamicGradScaler.update over the run's overflow sequence (an iteration
# overflowed iff its line counts one skipped iteration): prints a mismatch per line where the logged scale
# differs, then "held BACKOFFS GROWTHS" counts (overflows that kept the scale, halvings, doublings).
replay() {
  awk -v s="$2" -v mins="$3" -v win="$window" -v hyst="$hysteresis" '
    BEGIN { g = 0; h = hyst; expect = 1 }
    {
      if ($1 != expect) { print "mismatch: iteration " $1 " where " expect " was expected" }
      expect = $1 + 1
      if ($3 == 1) {
        g = 0; h -= 1
        if (h <= 0) { s = s * 0.5; if (s < mins) s = mins; back++ } else held++
      } else if ($3 == 0) {
        g += 1
        if (g == win) { g = 0; h = hyst; s = s * 2; grow++ }
      } else print "mismatch: iteration " $1 " skipped count " $3
      if ($2 != s) printf "mismatch: iteration %d loss scale %.17g, Megatron'"'"'s rule gives %.17g\n", $1, $2, s
    }
    END { printf "counts %d %d %d\n", held, back, grow }' "$1"
}

# ---- the fp16 run on the GPU: its scale trajectory is Megatron's ----
run gpt2-cuda-fp16 --device cuda --train-iters 32 "${scaler[@]}"
g=$GPTRAIN_TMP/gpt2-cuda-fp16.lines
[ "$(wc -l < "$g")" = 32 ] || { cat "$GPTRAIN_TMP/gpt2-cuda-fp16.log"; fail "not 32 training lines"; }
out=$(replay "$g" "$initial" 1)
if grep -q mismatch <<<"$out"; then
  cat "$g"
  echo "$out"
  fail "the loss scale does not follow Megatron's DynamicGradScaler (columns: iteration scale skipped loss norm)"
fi
read -r _ held backoffs growths <<<"$(tail -1 <<<"$out")"
skipped=$(awk '$3 == 1 { printf "%s%d", sep, $1; sep = " " }' "$g")
echo "fp16 on the GPU: skipped iterations: $skipped; overflows held by hysteresis $held, backoffs $backoffs, growths $growths; scale at the end $(tail -1 "$g" | cut -d' ' -f2)"
# The scaled loss gradient is ~2^32 / 1024 tokens = 2^22 per logit, past fp16's 65504: iterations 1 and 2
# overflow whatever the kernels do (the first holds the scale, the second halves it).
awk '$1 <= 2 && $3 != 1 { exit 1 }' "$g" || { cat "$g"; fail "iterations 1 and 2 did not overflow at scale 2^32 in fp16"; }
[ "$held" -ge 1 ] && [ "$backoffs" -ge 1 ] && [ "$growths" -ge 1 ] ||
  { cat "$g"; fail "the run did not show a held overflow, a backoff and a growth"; }
trained=$(awk '$3 == 0' "$g" | wc -l)
[ "$trained" -ge 8 ] || { cat "$g"; fail "only $trained iterations trained (expected at least 8 of 32)"; }

# ---- the CPU twin (fp32) skipping the same iterations ----
read -r -a skip_list <<<"$skipped"  # not empty: iterations 1 and 2 at least
run gpt2-cpu-fp32 --device cpu --train-iters 32 --iterations-to-skip "${skip_list[@]}"
c=$GPTRAIN_TMP/gpt2-cpu-fp32.lines
report=$(awk '
  NR == FNR { loss[$1] = $4; norm[$1] = $5; next }
  $3 == 1 { if ($1 in loss) print "bad: the cpu twin trained iteration " $1 " that the GPU skipped"; next }
  {
    if (!($1 in loss)) { print "bad: no cpu line for iteration " $1; next }
    e = ($4 - loss[$1]) / loss[$1]; if (e < 0) e = -e
    if (e > 2e-3) printf "bad: iteration %d lm loss %s, cpu %s (rel %.3e > 2e-3)\n", $1, $4, loss[$1], e
    if (e > maxl) maxl = e
    n = ($5 - norm[$1]) / norm[$1]; if (n < 0) n = -n
    bound = first_done ? 2e-2 : 1e-2; first_done = 1
    if (n > bound) printf "bad: iteration %d grad norm %s, cpu %s (rel %.3e > %g)\n", $1, $5, norm[$1], n, bound
    if (n > maxn) maxn = n
    compared++
  }
  END { printf "compared %d iterations: max rel lm loss diff %.3e, max rel grad norm diff %.3e\n", compared, maxl, maxn }
' "$c" "$g")
echo "fp16 GPU vs fp32 CPU twin: $report" | tail -1
if grep -q '^bad' <<<"$report"; then
  grep '^bad' <<<"$report"
  fail "the fp16 GPU run differs from the CPU twin"
fi
[ "$(wc -l < "$c")" = "$trained" ] || { cat "$c"; fail "the cpu twin logged $(wc -l < "$c") lines for $trained trained iterations"; }

# ---- the floor: every iteration overflows at 2^28 and above, the scale stops at --min-loss-scale ----
floor=268435456
run gpt2-cuda-fp16-floor --device cuda "${scaler[@]}" --min-loss-scale "$floor" --train-iters 8
f=$GPTRAIN_TMP/gpt2-cuda-fp16-floor.lines
out=$(replay "$f" "$initial" "$floor")
[ "$(wc -l < "$f")" = 8 ] && ! grep -q mismatch <<<"$out" && awk '$3 != 1 { exit 1 }' "$f" &&
  [ "$(tail -1 "$f" | cut -d' ' -f2)" = "$floor" ] ||
  { cat "$f"; echo "$out"; fail "--min-loss-scale $floor: expected 8 skipped iterations ending at the floor"; }
echo "fp16 floor run: 8 iterations skipped, scale $(cut -d' ' -f2 "$f" | tr '\n' ' ')"
echo "train_fp16_loss_scale: ok"
