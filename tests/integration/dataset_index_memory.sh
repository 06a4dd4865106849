#!/usr/bin/env bash
# The sample index's memory is computed from the epoch plan before anything is built:
# 1. --train-samples 100000000000 on a 50-document dataset stops at once (no index built, under 10 s)
#    with a message giving the bytes needed (terabytes) and those available; --dry-run, which plans for
#    the run's machines rather than this one, prints the bytes and warns;
# 2. --dry-run prints each index's bytes, equal to the bytes of the arrays the real run writes to its
#    index cache;
# 3. the memory available is the process's real limit: under `ulimit -v` (below MemAvailable) the index that
#    would not fit is refused up front, naming the limit. ~7 s.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_python numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
"$py" -c "
import json
with open('small.jsonl', 'w') as f:
    for i in range(50):
        f.write(json.dumps({'text': 'the quick brown fox jumps over the lazy dog ' * (i % 7 + 1)}) + '\n')"
"$GPTRAIN_BIN/preprocess_data" --input small.jsonl --output-prefix small --tokenizer-type GPT2BPETokenizer \
  --append-eod >/dev/null 2>&1
M=(--device cpu --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 32
  --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --log-interval 1 --eval-iters 1 --data-path small_text_document
  --split 90,10,0)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

echo "== 1. 1e11 samples: refused up front with the bytes needed; --dry-run warns"
start=$(date +%s)
if timeout 60 "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --train-samples 100000000000 --data-cache-path c1 >big.log 2>&1; then
  bad "1e11 samples ran"
fi
took=$(($(date +%s) - start))
[ $took -le 10 ] || bad "took ${took} s to refuse"
grep -qE "error: GPTDataset small_text_document train: the sample index needs [0-9.]+ TiB \([0-9]+ bytes\), more than the .* of memory available" big.log ||
  { cat big.log; bad "no message giving the bytes needed"; }
[ ! -e c1 ] || bad "an index cache was written"
# A dry run plans for the run's machines, not this one: it prints the bytes and warns, and exits 0.
timeout 60 "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --train-samples 100000000000 --dry-run >big-dry.log 2>&1 ||
  { cat big-dry.log; bad "--dry-run of 1e11 samples failed"; }
grep -qE "GPTDataset small_text_document train: .* 100000000[0-9]+ samples, index [0-9.]+ TiB \([0-9]+ bytes\) \(planned\)" big-dry.log ||
  { cat big-dry.log; bad "--dry-run printed no index bytes"; }
grep -qE "warning: the sample indices planned so far need [0-9.]+ TiB .* a run here would stop" big-dry.log ||
  bad "--dry-run did not warn about the memory"

echo "== 2. --dry-run's index bytes == the cache arrays' bytes"
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --train-samples 40 --dry-run >dry.log 2>&1 || { cat dry.log; bad "dry run"; }
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --train-samples 40 --data-cache-path cache >run.log 2>&1 || { cat run.log; bad "run"; }
"$py" - dry.log cache <<'PY' || bad "planned bytes differ from the built arrays"
import glob, re, sys
import numpy as np
text = open(sys.argv[1]).read()
# "index 26.01 KiB (26632 bytes) (planned)" or, below 1 KiB, "index 348 bytes (planned)"
planned = {m[1]: int(m[2]) for m in re.finditer(
    r"GPTDataset small_text_document (\w+): .* index (?:[0-9.]+ \w+ \()?(\d+) bytes\)? \(planned\)", text)}
built = {}
for f in glob.glob(sys.argv[2] + "/*GPTDataset-*-*_index.npy"):
    split = re.search(r"GPTDataset-(\w+)-", f)[1]
    built[split] = built.get(split, 0) + np.load(f).nbytes
print("planned", planned, "built", built)
assert planned == built and set(built) == {"train", "valid"}
PY
if asan_build; then
  echo "== 3. skipped: ulimit -v cannot be tested under AddressSanitizer"
  [ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
  exit 0
fi
echo "== 3. a limit below MemAvailable (ulimit -v) is the memory available: refused up front, naming the limit"
# 6e7 samples need a 1.4 GiB index: more than a 1 GiB address space leaves, less than a machine has free.
# One thread each: the process's own address space stays small.
( export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
  ulimit -v 1048576
  timeout 60 "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --train-samples 60000000 --data-cache-path c3 >limit.log 2>&1 ) &&
  bad "6e7 samples ran under ulimit -v 1 GiB"
grep -qE "error: GPTDataset small_text_document train: the sample index needs 1\.[0-9]+ GiB .*more than the .* left under the address-space limit \(ulimit -v\).*--train-samples" limit.log ||
  { cat limit.log; bad "the ulimit -v refusal does not name the index, the limit and the flag"; }
grep -q "out of host memory" limit.log && bad "it ran out of memory instead of refusing"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
