# Shared start of the training-parity scripts against transformers (sourced, not a test itself: only
# *.sh files are registered). hf_train_setup [PYTHON_MODULE...]: skip (exit 77) without a reference
# Python holding torch, transformers and the extra modules; wipe GPTRAIN_TMP; write a random tiny GPT-2
# (tests/python/hf_train_parity.py init) to $tmp/hf and its gptrain conversion to $tmp/ckpt.
# Sets bin, tmp, py and script.
hf_train_setup() {
  bin=$GPTRAIN_BIN
  tmp=$GPTRAIN_TMP
  py=${GPTRAIN_PYTHON:-}
  rm -rf "$tmp" && mkdir -p "$tmp"
  local modules
  modules=$(printf ', %s' torch transformers "$@")
  if [ -z "$py" ] || ! "$py" -c "import ${modules:2}" 2>/dev/null; then
    echo "skip: no Python with ${modules:2} (GPTRAIN_PYTHON='$py'; run scripts/python_refs.sh)"
    exit 77
  fi
  script=$GPTRAIN_SRC/tests/python/hf_train_parity.py
  "$py" "$script" init "$tmp/hf" 11
  "$bin/convert_from_hf" --load "$tmp/hf" --save "$tmp/ckpt" > "$tmp/convert.log"
}
