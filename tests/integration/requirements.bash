# Sourced by integration tests: skip (ctest's exit 77) when what the test reads is not on this machine.
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_SHARED:?}" "${GPTRAIN_TMP:?}"

# The corpora live next to the repo (../shared/data), not in it: a checkout without them skips.
need_corpora() {
  [ -d "$GPTRAIN_SHARED/data/corpora" ] || { echo "SKIP: $GPTRAIN_SHARED/data/corpora not found (the shared corpora)"; exit 77; }
}

# need_python MODULE...: the Python references (scripts/python_refs.sh) at GPTRAIN_PYTHON; sets $py.
need_python() {
  py=${GPTRAIN_PYTHON:-}
  local imports
  imports=$(IFS=,; echo "$*")
  if [ -z "$py" ] || ! "$py" -c "import $imports" 2>/dev/null; then
    echo "SKIP: no Python with $* at GPTRAIN_PYTHON='$py' (run scripts/python_refs.sh)"
    exit 77
  fi
}

# True for an AddressSanitizer build: ASan reserves terabytes of address space for its shadow memory, so a
# check under `ulimit -v` cannot run there (it aborts before main).
asan_build() {  # (not `ldd | grep -q`: under pipefail, ldd's SIGPIPE after grep's early exit reads as false)
  [[ "$(ldd "$GPTRAIN_BIN/pretrain_gpt" 2>/dev/null)" == *libasan* ]]
}
