# Shared by the mpi tests (sourced): mpirun on this machine, and the loss comparison.
mpirun_n() {  # mpirun_n N args...: oversubscribed run with a short collective timeout
  local n=$1
  shift
  timeout 300 mpirun --oversubscribe --allow-run-as-root -np "$n" "$@"
}

# max_rel_err REF OUT [FIRST_ITER]: largest relative difference of the "iter K loss X" and
# "eval K loss X" lines of REF (from K = FIRST_ITER on); fails when OUT misses one of them or REF has none.
max_rel_err() {
  awk -v first="${3:-1}" '
    ($1 == "iter" || $1 == "eval") && $3 == "loss" { k = $1 " " $2 }
    NR == FNR { if (($1 == "iter" || $1 == "eval") && $2 >= first) { ref[k] = $4; n++ } next }
    ($1 == "iter" || $1 == "eval") && (k in ref) { seen[k] = 1; e = $4 - ref[k]; if (e < 0) e = -e; e /= (ref[k] < 0 ? -ref[k] : ref[k]); if (e > m) m = e }
    END { if (n == 0) { print "no iter/eval lines in the reference" > "/dev/stderr"; exit 1 }
          for (k in ref) if (!(k in seen)) { print "missing iteration " k > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }
  ' "$1" "$2"
}

# bits LOG: "ITERATION LOSS NORM" (hex floats) of mpi_train_check --print-bits' iter lines, compared byte
# for byte between runs.
bits() { awk '$1 == "iter" && $7 == "bits" { print $2, $8, $9 }' "$1"; }

# train_check OUT NP ARGS...: $bin (mpi_train_check) with ${common[@]} and ARGS, in one process (NP 1) or
# NP ranks under mpirun, its output in OUT; on failure the output is shown and the test ends.
train_check() {
  local out=$1 n=$2
  shift 2
  if [ "$n" = 1 ]; then
    "$bin" "${common[@]}" "$@" > "$out" 2>&1 || { cat "$out"; exit 1; }
  else
    mpirun_n "$n" "$bin" "${common[@]}" "$@" > "$out" 2>&1 || { cat "$out"; exit 1; }
  fi
}
