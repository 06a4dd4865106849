# Shared by the mpi tests (sourced): mpirun on this machine, and the loss comparison.
mpirun_n() {  # mpirun_n N args...: oversubscribed run with a short collective timeout
  local n=$1
  shift
  timeout 300 mpirun --oversubscribe --allow-run-as-root -np "$n" "$@"
}

# max_rel_err REF OUT [FIRST_ITER]: largest relative difference of the "iter K loss X" lines present
# in both files (from FIRST_ITER on); fails when OUT has no such line or misses one of REF's.
max_rel_err() {
  awk -v first="${3:-1}" '
    NR == FNR { if ($1 == "iter" && $2 >= first) ref[$2] = $4; next }
    $1 == "iter" && ($2 in ref) { seen[$2] = 1; e = $4 - ref[$2]; if (e < 0) e = -e; e /= (ref[$2] < 0 ? -ref[$2] : ref[$2]); if (e > m) m = e }
    END { for (k in ref) if (!(k in seen)) { print "missing iteration " k > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }
  ' "$1" "$2"
}
