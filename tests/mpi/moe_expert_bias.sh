#!/usr/bin/env bash
# DeepSeek-style MoE routing through pretrain_gpt: sigmoid scores with the aux-loss-free expert bias
# (--moe-router-enable-expert-bias, rate 0.02), group-limited routing (8 experts in 4 groups, 2 groups chosen,
# top-4), a seq_aux_loss and router input jitter (--moe-input-jitter-eps). One process, DP 2, EP 2 and PP 2
# print the same losses (1e-6 relative) and tokens per expert, and save the same biases (the counts are
# summed over every rank before the update); the biases move by the rate at most once per iteration; 6
# iterations straight == 3 + save + --load + 3, digit for digit (the bias resumes bitwise); a checkpoint
# with a bias refuses a run without the flag. ~16 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
tmp=$GPTRAIN_TMP
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 8 --train-iters 6 --lr 1e-2 --mock-data --vocab-size 97
        --log-interval 1 --eval-iters 0 --seed 5 --hidden-dropout 0 --attention-dropout 0 --normalization RMSNorm
        --swiglu --position-embedding-type rope --disable-bias-linear --ffn-hidden-size 48 --num-experts 8
        --moe-router-topk 4 --moe-router-score-function sigmoid --moe-router-enable-expert-bias
        --moe-router-bias-update-rate 0.02 --moe-router-num-groups 4 --moe-router-group-topk 2
        --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 0.01 --moe-input-jitter-eps 0.1
        --moe-per-layer-logging
        --distributed-timeout-minutes 1)
losses() {
  sed -nE 's/.*iteration +([0-9]+)\/.*lm loss: ([^ ]+) \| seq_load_balancing_loss: ([^ ]+) \|.*/\1 \2 \3/p' "$1"
}
tokens() { grep -oE "layer [0-9]+:.*" "$1" | sed -E 's/load_balancing_loss [^ ]+//g'; }
bias_of() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["moe_router"]["expert_bias"], sort_keys=True))' "$1/iter_0000006/metadata.json"; }

"$bin" "${common[@]}" --save "$tmp/ref" --save-interval 3 > "$tmp/ref.log"
losses "$tmp/ref.log" > "$tmp/ref.txt"
[ "$(wc -l < "$tmp/ref.txt")" -eq 6 ] || { cat "$tmp/ref.log"; echo "FAIL: no MoE losses logged"; exit 1; }
python3 - "$tmp/ref" <<'PY'
import json, sys
for it in (3, 6):
    b = json.load(open(f"{sys.argv[1]}/iter_{it:07d}/metadata.json"))["moe_router"]["expert_bias"]
    assert sorted(b) == ["0", "1"] and all(len(v) == 8 for v in b.values()), b
    steps = [v / 0.02 for layer in b.values() for v in layer]
    # One step of +-rate (or none) per iteration; the tiny initial router leaves the bias in charge, so the
    # choice swings and every bias moves from 0 at first.
    assert all(abs(s - round(s)) < 1e-3 and abs(s) <= it for s in steps), steps
    assert it != 3 or all(round(s) != 0 for s in steps), steps
    print(f"expert bias after {it} iterations (units of the rate):", [round(s) for s in steps])
PY
fail=0
for spec in "--save $tmp/dp --save-interval 6|dp" \
            "--expert-model-parallel-size 2 --save $tmp/ep --save-interval 6|ep" \
            "--pipeline-model-parallel-size 2 --save $tmp/pp --save-interval 6|pp"; do
  flags=${spec%|*}
  name=${spec#*|}
  # shellcheck disable=SC2086
  mpirun_n 2 "$bin" "${common[@]}" $flags > "$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; exit 1; }
  losses "$tmp/$name.log" > "$tmp/$name.txt"
  err=$(paste "$tmp/ref.txt" "$tmp/$name.txt" | awk '
    NF != 6 || $1 != $4 { bad = 1 }
    { for (i = 2; i <= 3; ++i) { e = $i - $(i + 3); if (e < 0) e = -e; e /= $i; if (e > m) m = e } }
    END { if (bad || NR != 6) print "mismatch"; else printf "%.3e\n", m + 0 }')
  same_tokens=$(cmp -s <(tokens "$tmp/ref.log") <(tokens "$tmp/$name.log") && echo identical || echo DIFFER)
  same_bias=$([ "$(bias_of "$tmp/ref")" = "$(bias_of "$tmp/$name")" ] && echo identical || echo DIFFER)
  ok=$(awk -v e="$err" -v t="$same_tokens" -v b="$same_bias" \
    'BEGIN { print (e != "mismatch" && e <= 1e-6 && t == "identical" && b == "identical") ? "ok" : "FAIL" }')
  echo "np=2 $name: max rel err (lm, seq_aux) $err, tokens per expert $same_tokens, saved bias $same_bias $ok"
  [ "$ok" = ok ] || fail=1
done

# Resume: 3 + save + 3 gives the straight run's lines (the bias is state that must come back exactly).
lines() { grep -E "iteration +[0-9]+/|MoE layers at iteration" "$1" |
  sed -E 's/^ \[[^]]*\]//; s/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ tokens per second: [0-9.]+ \|//'; }
"$bin" "${common[@]}" --save "$tmp/half" --save-interval 3 --exit-interval 3 > "$tmp/first.log"
"$bin" "${common[@]}" --load "$tmp/half" --save "$tmp/resumed" --save-interval 6 > "$tmp/second.log"
lines "$tmp/ref.log" | grep -E "iteration +[4-6]/|at iteration [4-6]\b" > "$tmp/ref.tail"
diff "$tmp/ref.tail" <(lines "$tmp/second.log") || { echo "FAIL: the resumed run differs (above)"; fail=1; }
[ "$(bias_of "$tmp/ref")" = "$(bias_of "$tmp/resumed")" ] || { echo "FAIL: the resumed run saved another bias"; fail=1; }

# A model trained with a bias loads only into a run that has one.
no_bias=()
for f in "${common[@]}"; do [ "$f" = --moe-router-enable-expert-bias ] || no_bias+=("$f"); done
if "$bin" "${no_bias[@]}" --load "$tmp/half" --train-iters 4 > "$tmp/refused.log" 2>&1; then
  echo "FAIL: a run without --moe-router-enable-expert-bias loaded a checkpoint with an expert bias"; fail=1
else
  grep -q "give --moe-router-enable-expert-bias" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail=1; }
fi
exit $fail
