#!/usr/bin/env bash
# gptrain's FP8 casts (kernels/fp8/fp8_math.h, shared by the CPU twin and the CUDA kernels) agree bit for
# bit with ml_dtypes' float8_e4m3fn / float8_e5m2 on every representable value, every midpoint between
# neighbours, the values past the range and a million random floats, and every code widens to ml_dtypes'
# float; and the CPU twin of fp8_gemm equals numpy's float64 product of ml_dtypes-decoded operands within fp32
# summation error (every accepted pair of kinds). ~5 s.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_python numpy ml_dtypes
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
"$py" "$GPTRAIN_SRC/tests/python/fp8_ml_dtypes_ref.py" "$GPTRAIN_TMP"
GPTRAIN_FP8_REFERENCE="$GPTRAIN_TMP" "$GPTRAIN_BIN/unit_kernels" "[ml_dtypes]"
