#!/usr/bin/env bash
# GPT sample order parity: inspect_data's per-sample fingerprints against an independent numpy
# reference (tests/python/dataset_index_ref.py: numpy RandomState shuffles, plain loops) on synthetic
# .bin/.idx files written by the Python side. Covers one epoch, several epochs with and without the
# separate final epoch, valid/test splits, weighted and unweighted 2-dataset blends, per-split data
# paths, the index cache (reuse, corruption -> rebuild, np.load-able arrays equal to numpy's). ~10 s.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_TMP:?}"
PY=${GPTRAIN_PYTHON:-python3}
if ! "$PY" -c "import numpy" 2>/dev/null; then echo "SKIP: no numpy in $PY"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
REF="$PY $GPTRAIN_SRC/tests/python/dataset_index_ref.py"
INSPECT="$GPTRAIN_BIN/inspect_data"

$REF make a --docs 300 --seed 1 --max-len 200
$REF make b --docs 120 --seed 2 --max-len 90
$REF make c --docs 1500 --seed 4 --max-len 60

n=0
compare() {  # compare NAME FLAGS...: fingerprints of every sample of every split must be identical
  local name=$1; shift
  n=$((n + 1))
  $REF samples "$@" > "ref_$n.txt" 2> "ref_$n.log"
  "$INSPECT" samples "$@" --fingerprint > "got_$n.txt"
  if ! cmp -s "ref_$n.txt" "got_$n.txt"; then
    echo "FAIL $name: fingerprints differ (ref_$n.txt vs got_$n.txt)"; diff "ref_$n.txt" "got_$n.txt" | head -5
    exit 1
  fi
  [ -s "got_$n.txt" ] || { echo "FAIL $name: no samples"; exit 1; }
  echo "ok   $name ($(wc -l < "got_$n.txt") samples)"
}

compare "one epoch, no sizes" --data-path a --split 90,8,2 --seq-length 32 --seed 7
compare "separate final epoch" --data-path a --split 90,8,2 --seq-length 32 --train-samples 1000 \
  --valid-samples 200 --test-samples 5
grep -q "range \[0, 270) epochs 2 separate_final_epoch True" "ref_$n.log" || { echo "FAIL: case not separate"; exit 1; }
grep -q "range \[270, 294) epochs 3 separate_final_epoch True" "ref_$n.log"
compare "merged final epoch" --data-path a --split 90,8,2 --seq-length 32 --train-samples 1600 \
  --valid-samples 20 --test-samples 5
grep -q "range \[0, 270) epochs 2 separate_final_epoch False" "ref_$n.log" || { echo "FAIL: case not merged"; exit 1; }
compare "many epochs, default split, seed 0" --data-path c --seq-length 64 --seed 0 --train-samples 3000 \
  --valid-samples 50 --test-samples 40
compare "split rounding 1,1,1" --data-path b --split "1 1 1" --seq-length 16 --train-samples 300 \
  --valid-samples 300 --test-samples 300
compare "weighted blend" --data-path 0.3 a 0.7 b --split 98,2 --seq-length 32 --train-samples 900 \
  --valid-samples 40
compare "unweighted blend with sizes" --data-path a b --split 98,2 --seq-length 32 --train-samples 700 \
  --valid-samples 30
compare "unweighted exhaustive blend" --data-path a b --split 98,2 --seq-length 32
compare "per-split paths" --train-data-path 2 a 1 b --valid-data-path b --test-data-path a --seq-length 24 \
  --train-samples 500 --valid-samples 100 --test-samples 10

# Cache: default location next to the data; a second run maps it and gives the same samples.
ls a/cache/GPTDataset_indices/*-GPTDataset-train-checksums.json > /dev/null
compare "cached rerun" --data-path a --split 90,8,2 --seq-length 32 --train-samples 1000 --valid-samples 200 \
  --test-samples 5
# The cached arrays load with numpy and equal the reference arrays.
$REF arrays --data-path a --split 90,8,2 --seq-length 32 --train-samples 1000 --valid-samples 200 \
  --test-samples 5 --out refarrays 2>/dev/null
"$PY" - <<'PYEOF'
import glob, json, numpy as np
for split in ["train", "valid", "test"]:
    hits = []
    for d in glob.glob("a/cache/GPTDataset_indices/*-GPTDataset-%s-description.txt" % split):
        desc = json.load(open(d))
        if desc["num_samples"] == {"train": 1000, "valid": 200, "test": 5}[split] and desc["sequence_length"] == 32:
            hits.append(d[: -len("description.txt")])
    assert len(hits) == 1, (split, hits)
    for name in ["document_index", "sample_index", "shuffle_index"]:
        got = np.load(hits[0] + name + ".npy")
        want = np.load("refarrays/%s-%s.npy" % (split, name))
        assert got.shape == want.shape and (got == want).all(), (split, name)
print("ok   cached .npy arrays equal numpy's")
PYEOF
# Corrupt the entries that run used, each in a different way: truncation, flipped bytes, no checksums.
entry() {  # entry SPLIT NUM_SAMPLES: the cache stem of a (seq-length 32) GPTDataset entry of prefix a
  "$PY" -c '
import glob, json, sys
for d in glob.glob("a/cache/GPTDataset_indices/*-GPTDataset-%s-description.txt" % sys.argv[1]):
    j = json.load(open(d))
    if j["num_samples"] == int(sys.argv[2]) and j["sequence_length"] == 32:
        print(d[: -len("description.txt")])' "$1" "$2"
}
truncate -s -8 "$(entry train 1000)shuffle_index.npy"
printf '\xff\xff\xff\xff' | dd of="$(entry valid 200)sample_index.npy" bs=1 seek=200 conv=notrunc status=none
rm "$(entry test 5)checksums.json"
"$INSPECT" samples --data-path a --split 90,8,2 --seq-length 32 --train-samples 1000 --valid-samples 200 \
  --test-samples 5 --fingerprint > got_rebuilt.txt 2> rebuilt.log
cmp -s got_rebuilt.txt "ref_2.txt" || { echo "FAIL: samples differ after rebuilding a corrupt cache"; exit 1; }
[ "$(grep -c corrupt rebuilt.log)" = 2 ] || { echo "FAIL: corrupt cache not reported"; cat rebuilt.log; exit 1; }
[ -f "$(entry test 5)checksums.json" ] || { echo "FAIL: interrupted cache entry not rewritten"; exit 1; }
echo "ok   corrupt cache detected and rebuilt"
# A stale cache (data changed under the same prefix) must not be used.
$REF make a --docs 310 --seed 3 --max-len 200
compare "changed data under the same prefix" --data-path a --split 90,8,2 --seq-length 32 --train-samples 1000 \
  --valid-samples 200 --test-samples 5
# --data-cache-path puts every index (blends too) in the given directory.
"$INSPECT" samples --data-path 0.3 a 0.7 b --split 98,2 --seq-length 32 --train-samples 900 --valid-samples 40 \
  --data-cache-path mycache --fingerprint > got_cachepath.txt
ls mycache/*-BlendedDataset-train-checksums.json mycache/*-GPTDataset-valid-checksums.json > /dev/null
"$INSPECT" samples --data-path 0.3 a 0.7 b --split 98,2 --seq-length 32 --train-samples 900 --valid-samples 40 \
  --data-cache-path mycache --fingerprint | cmp -s - got_cachepath.txt
echo "ok   --data-cache-path"

# Errors: an empty split asked for samples fails (Megatron would hang), with a message.
if "$INSPECT" samples --data-path b --split 100,0.01,0 --seq-length 16 --valid-samples 5 > /dev/null 2> err.txt; then
  echo "FAIL: empty split with samples accepted"; exit 1
fi
grep -q "0 tokens" err.txt || { echo "FAIL: unclear error:"; cat err.txt; exit 1; }
echo "ok   empty split rejected: $(head -c 150 err.txt)"
# ...but an empty split asked for 0 samples (--eval-iters 0) is just left out.
"$INSPECT" samples --data-path b --split 100,0.01,0 --seq-length 16 --train-samples 10 --valid-samples 0 \
  --fingerprint > got_empty.txt 2> err.txt
grep -q "valid split of b is empty" err.txt && ! grep -q "^valid" got_empty.txt && grep -q "^train" got_empty.txt
echo "ok   empty split with 0 samples left out"
echo "PASS"
