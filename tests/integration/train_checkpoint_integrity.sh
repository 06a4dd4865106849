#!/usr/bin/env bash
# Checkpoint integrity on a real run: a one-bit flip in a saved weight (and a changed value in metadata.json)
# is refused at --load, naming the tensor and the newest earlier checkpoint that passes its checksums;
# --ckpt-fallback-to-intact resumes from that one, bit for bit. Before checksums, the same flip resumed at
# a loss of 2e35 with exit code 0. A deleted optimizer file is damage too (not a --no-save-optim save), with
# the same fallback; a tensor file copied in from another iteration or another run's save is refused by its stamp;
# a negative --ckpt-step is refused. ~20 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --train-iters 12 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --seed 7 --hidden-dropout 0.1)
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
"$bin/pretrain_gpt" "${common[@]}" > "$tmp/straight.log"
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/ckpt" --save-interval 4 --exit-interval 8 > "$tmp/first.log"
[ "$(cat "$tmp/ckpt/latest_checkpointed_iteration.txt")" = 8 ] || { echo "FAIL: tracker does not say 8"; exit 1; }
cp -r "$tmp/ckpt" "$tmp/pristine"

# Flip one bit in the middle of the first tensor's data of iter_0000008's model file.
flip_bit() {  # file tensor-name
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
path, name = sys.argv[1], sys.argv[2]
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    begin, end = header[name]["data_offsets"]
    at = 8 + n + (begin + end) // 2
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0x10]))
PY
}
tensor=decoder.layers.1.mlp.linear_fc1.weight
flip_bit "$tmp/ckpt/iter_0000008/model_tp00_pp000.safetensors" "$tensor"
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/damaged.log" 2>&1; then
  echo "FAIL: a damaged checkpoint was loaded"; tail -5 "$tmp/damaged.log"; exit 1
fi
for want in "iter_0000008/model_tp00_pp000.safetensors" "tensor \"$tensor\" is damaged" "iter_0000004" \
            "--ckpt-step 4" "--ckpt-fallback-to-intact"; do
  grep -qF -- "$want" "$tmp/damaged.log" || { echo "FAIL: the error does not say '$want':"; cat "$tmp/damaged.log"; exit 1; }
done
grep -qE "iteration +[0-9]+/" "$tmp/damaged.log" && { echo "FAIL: it trained"; exit 1; }
# --dry-run checks it too.
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" --dry-run > "$tmp/dry.log" 2>&1; then
  echo "FAIL: --dry-run passed a damaged checkpoint"; exit 1
fi
grep -qF "tensor \"$tensor\" is damaged" "$tmp/dry.log" || { echo "FAIL: --dry-run's error:"; cat "$tmp/dry.log"; exit 1; }

# With the flag: resumes from iteration 4 and trains on exactly as the straight run.
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" --ckpt-fallback-to-intact > "$tmp/fallback.log" 2>&1
grep -q "loading .*iter_0000004 instead" "$tmp/fallback.log" || { echo "FAIL: no fallback warning"; cat "$tmp/fallback.log"; exit 1; }
numbers "$tmp/straight.log" | grep -E "iteration +([5-9]|1[0-2])/" > "$tmp/straight.tail"
numbers "$tmp/fallback.log" | diff "$tmp/straight.tail" - || { echo "FAIL: the fallback run differs from the straight run"; exit 1; }

# Both checkpoints damaged: no earlier intact one.
flip_bit "$tmp/ckpt/iter_0000004/optim_tp00_pp000_dp000.safetensors" "exp_avg.$tensor"
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" --ckpt-fallback-to-intact > "$tmp/none.log" 2>&1; then
  echo "FAIL: loaded with every checkpoint damaged"; exit 1
fi
grep -q "No earlier checkpoint there passes its checksums" "$tmp/none.log" || { cat "$tmp/none.log"; exit 1; }
grep -qF "tensor \"exp_avg.$tensor\" is damaged" "$tmp/none.log" || { echo "FAIL: iter 4's damage not named"; exit 1; }

# A changed value in metadata.json (consumed samples 32 -> 36) is refused naming the file.
rm -rf "$tmp/ckpt" && cp -r "$tmp/pristine" "$tmp/ckpt"
sed -i 's/"consumed_train_samples": 32/"consumed_train_samples": 36/' "$tmp/ckpt/iter_0000008/metadata.json"
grep -q '"consumed_train_samples": 36' "$tmp/ckpt/iter_0000008/metadata.json" || { echo "FAIL: test edit missed"; exit 1; }
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/meta.log" 2>&1; then echo "FAIL: loaded"; exit 1; fi
grep -q "iter_0000008/metadata.json: damaged" "$tmp/meta.log" || { cat "$tmp/meta.log"; exit 1; }
# White space is not content: a re-indented metadata.json loads.
rm -rf "$tmp/ckpt" && cp -r "$tmp/pristine" "$tmp/ckpt"
python3 -c "import json,sys; p=sys.argv[1]; j=json.load(open(p)); open(p,'w').write(json.dumps(j, indent=7))" \
  "$tmp/ckpt/iter_0000008/metadata.json"
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/reindented.log" 2>&1
numbers "$tmp/straight.log" | grep -E "iteration +(9|1[0-2])/" | diff - <(numbers "$tmp/reindented.log")

# A deleted optimizer file of a checkpoint that saved optimizer state is damage, not a --no-save-optim save:
# the error names the file, the newest intact checkpoint and the fallback, which resumes bitwise.
rm -rf "$tmp/ckpt" && cp -r "$tmp/pristine" "$tmp/ckpt"
rm "$tmp/ckpt/iter_0000008/optim_tp00_pp000_dp000.safetensors"
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/no-optim.log" 2>&1; then
  echo "FAIL: loaded a checkpoint whose optimizer file was deleted"; exit 1
fi
for want in "iter_0000008/optim_tp00_pp000_dp000.safetensors" "missing" "iter_0000004" "--ckpt-fallback-to-intact"; do
  grep -qF -- "$want" "$tmp/no-optim.log" || { echo "FAIL: the error does not say '$want':"; cat "$tmp/no-optim.log"; exit 1; }
done
grep -qF -- "--no-save-optim" "$tmp/no-optim.log" && { echo "FAIL: blamed on --no-save-optim:"; cat "$tmp/no-optim.log"; exit 1; }
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" --ckpt-fallback-to-intact > "$tmp/no-optim-fallback.log" 2>&1 ||
  { echo "FAIL: no fallback for a deleted optimizer file:"; cat "$tmp/no-optim-fallback.log"; exit 1; }
grep -q "loading .*iter_0000004 instead" "$tmp/no-optim-fallback.log" || { cat "$tmp/no-optim-fallback.log"; exit 1; }
numbers "$tmp/no-optim-fallback.log" | diff "$tmp/straight.tail" - || { echo "FAIL: the fallback run differs"; exit 1; }

# A tensor file copied from another iteration (its checksums hold) is refused naming the file and both iterations.
rm -rf "$tmp/ckpt" && cp -r "$tmp/pristine" "$tmp/ckpt"
cp "$tmp/ckpt/iter_0000004/model_tp00_pp000.safetensors" "$tmp/ckpt/iter_0000008/"
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/copied.log" 2>&1; then
  echo "FAIL: loaded iteration 4's model file as iteration 8's"; exit 1
fi
grep -qE "iter_0000008/model_tp00_pp000.safetensors: written for iteration 4, .*iteration 8" "$tmp/copied.log" ||
  { echo "FAIL: the copied file is not named with both iterations:"; cat "$tmp/copied.log"; exit 1; }
# The same iteration of another run (another seed: other weights, checksums that hold) is another save's file.
"$bin/pretrain_gpt" "${common[@]}" --seed 8 --save "$tmp/other" --save-interval 8 --exit-interval 8 > /dev/null
rm -rf "$tmp/ckpt" && cp -r "$tmp/pristine" "$tmp/ckpt"
cp "$tmp/other/iter_0000008/optim_tp00_pp000_dp000.safetensors" "$tmp/ckpt/iter_0000008/"
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/other-run.log" 2>&1; then
  echo "FAIL: loaded another run's optimizer file"; exit 1
fi
grep -qE "iter_0000008/optim_tp00_pp000_dp000.safetensors: written by another save \(save id [0-9a-f]{8}; .*metadata.json says [0-9a-f]{8}\)" \
  "$tmp/other-run.log" || { echo "FAIL: another run's file is not named:"; cat "$tmp/other-run.log"; exit 1; }

# A negative --ckpt-step is refused naming the flag (it used to look for iter_-000001).
if "$bin/pretrain_gpt" "${common[@]}" --load "$tmp/pristine" --ckpt-step -1 > "$tmp/negative.log" 2>&1; then
  echo "FAIL: --ckpt-step -1 accepted"; exit 1
fi
grep -q "error: --ckpt-step must be >= 0" "$tmp/negative.log" || { cat "$tmp/negative.log"; exit 1; }
grep -q "iter_-" "$tmp/negative.log" && { echo "FAIL: still looked for a negative iteration"; exit 1; }
echo "damaged tensor and metadata refused by name; fallback resumes bitwise"
