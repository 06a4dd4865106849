"""ml_dtypes' FP8 casts as the reference for gptrain's (kernels/fp8/fp8_math.h).

Writes into DIR: inputs.f32 (every finite value of both formats, the midpoints between neighbouring
values and one float either side, the values just past each format's range, then a million random floats:
half uniform bit patterns, half dense in the range FP8 represents), e4m3.u8 and e5m2.u8 (ml_dtypes'
float8_e4m3fn / float8_e5m2 casts of those inputs: round to nearest even, not saturating), and
decode_e4m3.f32 / decode_e5m2.f32 (each of the 256 codes widened to float32); and the FP8 GEMM's
reference: gemm_params.txt ("M N K alpha a_scale_inv b_scale_inv") and, per accepted pair of kinds,
gemm_<a>_<b>_a.u8 (M, K) and gemm_<a>_<b>_b.u8 (N, K) random codes of finite values, gemm_<a>_<b>_out.f64 the
float64 product alpha * sa * sb * A B^T of the operands ml_dtypes decodes.
"""
import argparse
import os

import ml_dtypes
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("dir")
a = ap.parse_args()

rng = np.random.default_rng(20261128)
parts = []
for name, dt in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(dt).astype(np.float32)
    values.tofile(os.path.join(a.dir, f"decode_{name}.f32"))
    finite = np.unique(np.abs(values[np.isfinite(values)]).astype(np.float64))
    top = finite[-1] + (finite[-1] - finite[-2])  # the next value past the range, as if it existed
    grid = np.append(finite, top)
    mids = ((grid[:-1] + grid[1:]) / 2).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(np.inf))])
    beyond = np.array([top, 2 * top, 1e30, np.inf], dtype=np.float32)
    parts.append(np.concatenate([finite.astype(np.float32), near, beyond]))
fixed = np.concatenate(parts)
bits = rng.integers(0, 2**32, size=500_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
dense = np.ldexp(rng.uniform(-1, 1, size=500_000), rng.integers(-22, 18, size=500_000)).astype(np.float32)
inputs = np.concatenate([fixed, -fixed, bits, dense]).astype(np.float32)
inputs.tofile(os.path.join(a.dir, "inputs.f32"))
with np.errstate(all="ignore"):
    inputs.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).tofile(os.path.join(a.dir, "e4m3.u8"))
    inputs.astype(ml_dtypes.float8_e5m2).view(np.uint8).tofile(os.path.join(a.dir, "e5m2.u8"))

M, N, K, alpha, sa, sb = 24, 40, 56, 0.75, 0.375, 2.5
with open(os.path.join(a.dir, "gemm_params.txt"), "w") as f:
    f.write(f"{M} {N} {K} {alpha} {sa} {sb}\n")
fp8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def finite_codes(shape, dt):
    codes = rng.integers(0, 256, size=shape, dtype=np.uint8)
    codes[~np.isfinite(codes.view(dt).astype(np.float32))] = 0
    return codes


for ka, kb in (("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3")):
    ca, cb = finite_codes((M, K), fp8[ka]), finite_codes((N, K), fp8[kb])
    prod = ca.view(fp8[ka]).astype(np.float64) @ cb.view(fp8[kb]).astype(np.float64).T
    out = prod * (np.float64(np.float32(alpha)) * np.float64(np.float32(sa)) * np.float64(np.float32(sb)))
    ca.tofile(os.path.join(a.dir, f"gemm_{ka}_{kb}_a.u8"))
    cb.tofile(os.path.join(a.dir, f"gemm_{ka}_{kb}_b.u8"))
    out.tofile(os.path.join(a.dir, f"gemm_{ka}_{kb}_out.f64"))
print(f"fp8_ml_dtypes_ref: {inputs.size} inputs (ml_dtypes {ml_dtypes.__version__})")
