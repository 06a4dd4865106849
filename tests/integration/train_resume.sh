#!/usr/bin/env bash
# Bitwise resume: 12 iterations straight == 6 iterations + save (--exit-interval) + --load and 6 more.
# Dropout on, warmup + cosine LR, gradient accumulation, evaluation every 4 iterations: the resumed run
# must print the same losses, learning rates, grad norms and validation losses, digit for digit.
# Also checks the checkpoint layout (tracker written, iter_0000006/ with metadata and safetensors), and that the
# resumed run saves the Hugging Face family its checkpoint records. A save whose tracker cannot be written
# (disk full, injected) stops naming the cause and the complete iteration; the rerun on that directory resumes
# from the iteration (no tracker: the newest complete one, with a line saying so), bitwise, leaving it as it is.
# A resume with another --data-path or --split warns. The straight run's --log-memory-to-tensorboard scalars hold
# the memory plan's total; its loss-scale scalars are 1, and --no-log-loss-scale-to-tensorboard leaves them out.
# ~15 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --train-iters 12 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --eval-interval 4 --eval-iters 2
        --seed 7 --hidden-dropout 0.1 --attention-dropout 0.1)
# The straight run also writes the optional TensorBoard scalars (they leave the log lines as they are).
"$bin/pretrain_gpt" "${common[@]}" --tensorboard-dir "$tmp/tb" --metrics-file "$tmp/straight.jsonl" \
  --log-validation-ppl-to-tensorboard --log-world-size-to-tensorboard --log-timers-to-tensorboard \
  --log-memory-to-tensorboard > "$tmp/straight.log"
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/ckpt" --save-interval 100 --exit-interval 6 > "$tmp/first.log"
[ "$(cat "$tmp/ckpt/latest_checkpointed_iteration.txt")" = "6" ] || { echo "tracker does not say 6"; exit 1; }
for f in metadata.json model_tp00_pp000.safetensors optim_tp00_pp000_dp000.safetensors; do
  [ -f "$tmp/ckpt/iter_0000006/$f" ] || { echo "missing iter_0000006/$f"; exit 1; }
done
# The Hugging Face family: a run from flags records its switches' (gpt2 here); a run that loads a checkpoint
# saves the family the checkpoint records, whatever its switches would pick (a Qwen2 model has Llama's). The
# first checkpoint's family is rewritten (a metadata.json without "crc32c" is taken unchecked) to one no
# switches give.
family() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model"]["family"])' "$1"; }
[ "$(family "$tmp/ckpt/iter_0000006/metadata.json")" = gpt2 ] || { echo "FAIL: the first run's family is not gpt2"; exit 1; }
python3 - "$tmp/ckpt/iter_0000006/metadata.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["model"]["family"] = "recorded-family"
m.pop("crc32c", None)
json.dump(m, open(sys.argv[1], "w"))
PY
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" --save "$tmp/ckpt" --save-interval 100 > "$tmp/second.log"
[ "$(family "$tmp/ckpt/iter_0000012/metadata.json")" = recorded-family ] ||
  { echo "FAIL: the resumed run saved family $(family "$tmp/ckpt/iter_0000012/metadata.json"), not the loaded one"; exit 1; }

# Iteration lines without the wall-clock parts (timestamp, elapsed time, tokens/s); validation lines.
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
numbers "$tmp/straight.log" validation | grep -E "iteration +([7-9]|1[0-2])/|at iteration (8|12)" > "$tmp/straight.tail"
numbers "$tmp/second.log" validation > "$tmp/second.all"
if ! diff "$tmp/straight.tail" "$tmp/second.all"; then
  echo "FAIL: the resumed run differs from the straight run (above)"
  exit 1
fi
[ "$(grep -c 'iteration' "$tmp/straight.tail")" -ge 8 ] || { echo "too few lines compared"; exit 1; }
# The first half must also match the straight run (same code path until the save).
numbers "$tmp/first.log" validation | grep -E "iteration +[1-6]/" > "$tmp/first.head"
numbers "$tmp/straight.log" validation | grep -E "iteration +[1-6]/" | diff - "$tmp/first.head"
# TensorBoard events and JSONL of the straight run hold the same per-iteration losses as the log.
if [ -n "${GPTRAIN_PYTHON:-}" ] && "$GPTRAIN_PYTHON" -c "import tensorboard" 2>/dev/null; then
  "$bin/pretrain_gpt" "${common[@]}" --train-iters 3 --eval-iters 0 --tensorboard-dir "$tmp/tb_noscale" \
    --no-log-loss-scale-to-tensorboard > "$tmp/noscale.log"
  "$GPTRAIN_PYTHON" - "$tmp/tb" "$tmp/straight.jsonl" "$tmp/straight.log" "$tmp/tb_noscale" <<'PY'
import json, re, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
# Megatron writes loss-scale (1 without --fp16) unless --no-log-loss-scale-to-tensorboard.
assert [(e.step, e.value) for e in acc.Scalars("loss-scale")] == [(i, 1.0) for i in range(1, 13)]
noscale = EventAccumulator(sys.argv[4]); noscale.Reload()
tags = noscale.Tags()["scalars"]
assert "lm loss" in tags and not any(t.startswith("loss-scale") for t in tags), tags
tb = {e.step: e.value for e in acc.Scalars("lm loss")}
log = {int(m.group(1)): float(m.group(2)) for m in
       re.finditer(r"iteration +(\d+)/ +\d+ \|.*?lm loss: ([0-9.E+-]+)", open(sys.argv[3]).read())}
js = {r["iteration"]: r["losses"]["lm loss"] for r in map(json.loads, open(sys.argv[2])) if r["event"] == "train"}
assert sorted(tb) == list(range(1, 13)) and sorted(log) == sorted(tb) == sorted(js), (sorted(tb), sorted(log))
for it in tb:
    assert abs(tb[it] - log[it]) <= 1e-6 * abs(log[it]) + 1e-6, (it, tb[it], log[it])
    assert abs(js[it] - log[it]) <= 1e-6 * abs(log[it]), (it, js[it], log[it])
assert "lm loss validation" in acc.Tags()["scalars"]
# --log-validation-ppl-to-tensorboard: exp(min(20, loss)) beside each validation loss (and vs samples).
import math
val = {e.step: e.value for e in acc.Scalars("lm loss validation")}
ppl = {e.step: e.value for e in acc.Scalars("lm loss validation ppl")}
n_ppl = len(acc.Scalars("lm loss validation ppl"))
assert sorted(ppl) == sorted(val) and len(acc.Scalars("lm loss validation ppl vs samples")) == n_ppl > 0, (ppl, val)
for it in val:
    assert abs(ppl[it] - math.exp(min(20.0, val[it]))) <= 1e-5 * ppl[it], (it, ppl[it], val[it])
# --log-world-size-to-tensorboard: 1 at every iteration; --log-timers-to-tensorboard: iteration-time (s) at
# every log line but the run's first.
assert [(e.step, e.value) for e in acc.Scalars("world-size")] == [(i, 1.0) for i in range(1, 13)]
assert len(acc.Scalars("world-size vs samples")) == 12
times = acc.Scalars("iteration-time")
assert [e.step for e in times] == list(range(2, 13)) and all(0 < e.value < 60 for e in times), times
# --log-memory-to-tensorboard: every iteration, what the CPU backend holds: the memory plan's total once the
# optimizer state exists (the plan prints MiB to 2 decimals), the same every iteration; reserved == allocated.
plan = re.search(r"memory plan.*?total ([0-9.]+) MiB", open(sys.argv[3]).read())
mem = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in
       ("mem-reserved-bytes", "mem-allocated-bytes", "mem-max-allocated-bytes", "mem-allocated-count")}
assert [s for s, _ in mem["mem-allocated-bytes"]] == list(range(1, 13)), mem
allocated = {v for _, v in mem["mem-allocated-bytes"]}
assert len(allocated) == 1 and plan and abs(allocated.pop() / 2**20 - float(plan.group(1))) <= 0.005, (mem, plan)
assert mem["mem-reserved-bytes"] == mem["mem-allocated-bytes"], mem
assert all(m >= a for (_, m), (_, a) in zip(mem["mem-max-allocated-bytes"], mem["mem-allocated-bytes"])), mem
assert all(v > 0 for _, v in mem["mem-allocated-count"]), mem
print("TensorBoard and JSONL losses match the log lines; validation ppl, world size and iteration time, memory written")
PY
fi
# Disk full at the tracker write of the first save.
if GPTRAIN_FAULT_INJECT=tracker:1 "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/full" --save-interval 6 \
  > "$tmp/full.log" 2>&1; then
  echo "FAIL: a failed tracker write went unnoticed"; exit 1
fi
for want in "latest_checkpointed_iteration.txt" "No space left on device" "iter_0000006 is complete"; do
  grep -qF "$want" "$tmp/full.log" || { echo "FAIL: the error does not say '$want'"; cat "$tmp/full.log"; exit 1; }
done
[ ! -e "$tmp/full/latest_checkpointed_iteration.txt" ] || { echo "FAIL: a tracker appeared"; exit 1; }
inode=$(stat -c %i "$tmp/full/iter_0000006")
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/full" --save "$tmp/full" --save-interval 6 > "$tmp/full_resume.log" 2>&1 ||
  { cat "$tmp/full_resume.log"; exit 1; }
grep -q "no latest_checkpointed_iteration.txt.*resuming from .*iter_0000006" "$tmp/full_resume.log" ||
  { echo "FAIL: no line saying the tracker was missing and which iteration resumes"; cat "$tmp/full_resume.log"; exit 1; }
[ "$(stat -c %i "$tmp/full/iter_0000006")" = "$inode" ] || { echo "FAIL: iter_0000006 was rewritten"; exit 1; }
numbers "$tmp/full_resume.log" validation | diff "$tmp/straight.tail" - || { echo "FAIL: the rerun differs"; exit 1; }
echo "resume is bitwise: $(wc -l < "$tmp/straight.tail") lines identical"

# The data a checkpoint was trained on: metadata.json records --data-path and --split. A resume with other ones
# goes on (as Megatron, which does not compare them: a new blend for the rest of a run is a common change) but
# warns, naming the flag and both values; the same data, --split spelled otherwise, warns of nothing.
python3 -c "
import json
with open('$tmp/docs.jsonl', 'w') as f:
    for i in range(40):
        f.write(json.dumps({'text': 'a resumed run reads on where it stopped ' * (i % 5 + 1)}) + '\n')"
"$bin/preprocess_data" --input "$tmp/docs.jsonl" --output-prefix "$tmp/a" --tokenizer-type GPT2BPETokenizer \
  --append-eod > /dev/null 2>&1
cp "$tmp/a_text_document.bin" "$tmp/b_text_document.bin" && cp "$tmp/a_text_document.idx" "$tmp/b_text_document.idx"
data=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --train-iters 4 --lr 1e-3 --log-interval 1 --eval-iters 1
      --data-cache-path "$tmp/cache" --data-path "$tmp/a_text_document" --split 90,10,0)
"$bin/pretrain_gpt" "${data[@]}" --save "$tmp/dck" --save-interval 2 --exit-interval 2 > "$tmp/data1.log" 2>&1 ||
  { cat "$tmp/data1.log"; exit 1; }
resume_data() {  # log, extra flags (they override the ones in $data)
  local log=$1; shift
  "$bin/pretrain_gpt" "${data[@]}" "$@" --load "$tmp/dck" > "$log" 2>&1 || { cat "$log"; exit 1; }
}
resume_data "$tmp/same.log" --split 9,1,0
grep -q "warning: .*--data-path\|warning: .*--split" "$tmp/same.log" && { echo "FAIL: warned on the same data"; exit 1; }
resume_data "$tmp/other-path.log" --data-path "$tmp/b_text_document"
grep -qE "warning: resuming with --data-path .*b_text_document, but the checkpoint was trained with --data-path .*a_text_document" \
  "$tmp/other-path.log" || { echo "FAIL: no warning of the changed --data-path:"; cat "$tmp/other-path.log"; exit 1; }
resume_data "$tmp/other-split.log" --split 80,20,0
grep -qE "warning: resuming with --split 80,20,0, but the checkpoint was trained with --split 90,10,0" \
  "$tmp/other-split.log" || { echo "FAIL: no warning of the changed --split:"; cat "$tmp/other-split.log"; exit 1; }
echo "changed data args warned of"
