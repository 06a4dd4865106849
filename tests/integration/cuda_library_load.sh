#!/usr/bin/env bash
# A CUDA build keeps its CUDA code in lib/libgptrain_cuda.so and lib/libgptrain_nccl.so, loaded on first
# use: pretrain_gpt links no CUDA library, a CPU run (--device cpu, and --device auto without a driver)
# loads none, --device cuda loads them (on a machine without a GPU the error is then the driver's, not
# the loader's), and a pretrain_gpt copied away from its lib/ folder says where it looked.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
if ! "$GPTRAIN_BIN/gptrain_version" | grep -q cuda; then echo "SKIP: this build has no CUDA backend"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok  $*"; }
M=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --max-position-embeddings 8
  --micro-batch-size 1 --global-batch-size 1 --train-iters 1 --lr 1e-3 --mock-data --vocab-size 64)
driver=1
ldconfig -p | grep -q 'libcuda\.so\.1 ' || driver=0

cuda_libs='lib(cudart|cublas|cublasLt|cudnn|nccl)\.so|libgptrain_(cuda|nccl)\.so'
if ldd "$GPTRAIN_BIN/pretrain_gpt" | grep -Eq "$cuda_libs"; then
  bad "pretrain_gpt links CUDA libraries: $(ldd "$GPTRAIN_BIN/pretrain_gpt" | grep -E "$cuda_libs" | tr '\n' ' ')"
else
  ok "pretrain_gpt links no CUDA library"
fi

# LD_DEBUG=files lists every library the loader opens, at start and later (dlopen).
devices=(cpu)
[ "$driver" = 1 ] || devices+=(auto)
for dev in "${devices[@]}"; do
  if ! LD_DEBUG=files "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --device "$dev" > "run_$dev.log" 2>&1; then
    tail -20 "run_$dev.log"; bad "--device $dev run failed"
  elif grep -Eq "file=[^ ]*($cuda_libs)" "run_$dev.log"; then
    bad "--device $dev loaded: $(grep -Eo "file=[^ ]*($cuda_libs)[^ ]*" "run_$dev.log" | sort -u | tr '\n' ' ')"
  else
    ok "--device $dev trains without loading a CUDA library"
  fi
done

# --device cuda loads libgptrain_cuda.so (with every symbol it needs found in pretrain_gpt).
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --device cuda > cuda.log 2>&1 && rc=0 || rc=$?
if [ "$driver" = 1 ]; then
  [ "$rc" = 0 ] && grep -q "cuda backend: GPU 0" cuda.log && ok "--device cuda trains" ||
    { tail -20 cuda.log; bad "--device cuda on a machine with a driver"; }
else
  [ "$rc" != 0 ] && grep -q "no NVIDIA driver found" cuda.log && ! grep -q "cannot load\|was not found" cuda.log &&
    ok "--device cuda without a driver: the library loads, then the driver check refuses" ||
    { cat cuda.log; bad "--device cuda without a driver"; }
fi

# The same executable away from its lib/ folder, then with a lib/ folder beside its bin/ folder.
mkdir -p alone moved/bin
cp "$GPTRAIN_BIN/pretrain_gpt" alone/
"alone/pretrain_gpt" "${M[@]}" --device cuda > alone.log 2>&1 && rc=0 || rc=$?
[ "$rc" != 0 ] && grep -q "libgptrain_cuda.so was not found (looked in $PWD/lib/libgptrain_cuda.so, $PWD/alone/libgptrain_cuda.so" alone.log &&
  ok "copied alone: the error names the library and the folders searched" || { cat alone.log; bad "copied alone"; }
cp "$GPTRAIN_BIN/pretrain_gpt" moved/bin/ && cp -r "$GPTRAIN_BIN/../lib" moved/lib
"moved/bin/pretrain_gpt" "${M[@]}" --device cuda > moved.log 2>&1 || true
if grep -q "was not found\|cannot load" moved.log; then cat moved.log; bad "bin/ + lib/ moved together"; else
  ok "bin/ and lib/ moved together: the library is found"; fi

[ "$fails" = 0 ] || { echo "$fails failures"; exit 1; }
echo "cuda_library_load: all checks passed"
