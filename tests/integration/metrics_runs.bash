# Sourced by the training tests that compare the losses of several runs (the caller sets bin, tmp, the
# common flags `common` and defines fail):
#   losses METRICS_JSONL  each train event's "iteration loss", the loss printed in full (repr)
#   run NAME FLAGS...     pretrain_gpt with ${common[@]} and FLAGS must succeed and log at least 8 losses;
#                         leaves $tmp/NAME.log, NAME.jsonl and NAME.losses
losses() {
  python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("event") == "train": print(r["iteration"], repr(r["losses"]["lm loss"]))' "$1"
}
run() {
  local name=$1
  shift
  "$bin/pretrain_gpt" "${common[@]}" --metrics-file "$tmp/$name.jsonl" "$@" > "$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log"; fail "run $name"; }
  losses "$tmp/$name.jsonl" > "$tmp/$name.losses"
  [ "$(wc -l < "$tmp/$name.losses")" -ge 8 ] || fail "run $name: no loss lines"
}
