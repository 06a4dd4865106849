# Shared body of the family_*.sh parity tests (sourced, not a test itself: only *.sh files are registered);
# tests/integration/family_*.sh run one process, tests/mpi/family_{tp2,pp2}.sh run under mpirun (label mpi).
# family_setup [--mpi]: skip (exit 77) when the reference python, mpirun (with --mpi) or an app is missing;
# wipe GPTRAIN_TMP and cd to tests/python, where family_parity.py lives.
family_setup() {
  : "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}"
  if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
  if [[ "${1:-}" == "--mpi" ]]; then
    if ! command -v mpirun > /dev/null; then echo "SKIP: no mpirun"; exit 77; fi
  fi
  local b
  for b in convert_from_hf convert_to_hf gptrain_forward pretrain_gpt inspect_data; do
    if [[ ! -x "$GPTRAIN_BIN/$b" ]]; then echo "SKIP: $GPTRAIN_BIN/$b not built"; exit 77; fi
  done
  rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
  cd "$GPTRAIN_SRC/tests/python"
}

# family_parity_single FAMILY [FAMILY_PARITY_ARGS...]: the single-process parity run.
family_parity_single() {
  family_setup
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
  local fam=$1
  shift
  "$GPTRAIN_PYTHON" family_parity.py --family "$fam" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" "$@"
}

# family_parity_mpi NP "PARALLEL FLAGS" FAMILY [FAMILY_PARITY_ARGS...]: one family under mpirun -np NP with the
# given parallel flags (the ranks left over make the data-parallel size), trained in two runs (stopped after
# iteration 3 and resumed from its checkpoint), so each layout proves resumption too.
family_parity_mpi() {
  local np=$1 parallel=$2 fam=$3
  shift 3
  family_setup --mpi
  export OMP_NUM_THREADS=1
  "$GPTRAIN_PYTHON" family_parity.py --family "$fam" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" \
    --launcher "mpirun --oversubscribe --allow-run-as-root -np $np" --parallel "$parallel" --resume-at 3 "$@"
}

# family_parity_mpi2 "PARALLEL FLAGS" FAMILY...: family_parity_mpi on 2 ranks, for each family.
family_parity_mpi2() {
  local parallel=$1 fam
  shift
  for fam in "$@"; do family_parity_mpi 2 "$parallel" "$fam"; done
}

# The layout that proves a family under every kind of model parallelism at once: 8 ranks as tensor parallel 2 x
# pipeline parallel 2 x data parallel 2 (add --expert-model-parallel-size 2 for an MoE family).
FAMILY_LAYOUT_8="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
