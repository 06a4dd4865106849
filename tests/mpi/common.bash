# Shared by the mpi tests (sourced): mpirun on this machine, and the loss comparison.
mpirun_n() {  # mpirun_n N args...: oversubscribed run with a short collective timeout
  local n=$1
  shift
  timeout 300 mpirun --oversubscribe --allow-run-as-root -np "$n" "$@"
}

# max_rel_err REF OUT [FIRST_ITER]: largest relative difference of the "iter K loss X" and
# "eval K loss X" lines of REF (from K = FIRST_ITER on); fails when OUT misses one of them.
max_rel_err() {
  awk -v first="${3:-1}" '
    ($1 == "iter" || $1 == "eval") && $3 == "loss" { k = $1 " " $2 }
    NR == FNR { if (($1 == "iter" || $1 == "eval") && $2 >= first) ref[k] = $4; next }
    ($1 == "iter" || $1 == "eval") && (k in ref) { seen[k] = 1; e = $4 - ref[k]; if (e < 0) e = -e; e /= (ref[k] < 0 ? -ref[k] : ref[k]); if (e > m) m = e }
    END { for (k in ref) if (!(k in seen)) { print "missing iteration " k > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }
  ' "$1" "$2"
}
