"""The data-parallel gradient reduction, simulated in numpy from each rank's gradients before it.

Reads DIR/local_R.f32 (rank R's gradients before the reduction) and DIR/reduced_R.f32 (after it), as
mpi_train_check --dump-grads writes them, for R < --ranks (all data-parallel ranks of a DP-only
layout). The simulation follows Megatron: every rank scales its gradients by 1/DP before the
reduction; fp32 sums in fp32 in rank order; bf16 rounds each scaled gradient to bf16 (nearest, ties to
even), sums in rank order rounding to bf16 after every rank's term, and widens the sum back to fp32.
Every rank's reduced gradients must equal the simulation bit for bit (several ranks need rank-ordered,
--deterministic-mode sums; two ranks give one rounding in any order). For bf16 the reduced values must
also lie within DP - 1 + 1 bf16 roundings of the exact fp64 mean, and differ from the fp32 reduction
somewhere (the flag has an effect). Prints one line of numbers and, with --norm HEX, checks that the
simulated gradients' L2 norm matches the norm the run printed (relative 1e-12: summation order only).
"""
import argparse
import os
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--mode", choices=["fp32", "bf16"], required=True)
ap.add_argument("--norm", help="the run's iteration-1 gradient norm as a hex float")
a = ap.parse_args()


def to_bf16(x):
    """float32 array -> bf16 bit patterns (uint16), round to nearest even (no NaNs in gradients)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype(np.uint16)


def from_bf16(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


local = [np.fromfile(os.path.join(a.dir, f"local_{r}.f32"), dtype=np.float32) for r in range(a.ranks)]
reduced = [np.fromfile(os.path.join(a.dir, f"reduced_{r}.f32"), dtype=np.float32) for r in range(a.ranks)]
n = local[0].size
assert n > 1000 and all(x.size == n for x in local + reduced), "gradient dumps of different sizes"
assert any(not np.array_equal(local[0], x) for x in local[1:]), "the ranks saw the same data"
scale = np.float32(1.0 / a.ranks)
scaled = [x * scale for x in local]  # fp32 products, one rounding each

fp32 = scaled[0].copy()
for x in scaled[1:]:
    fp32 = fp32 + x
if a.mode == "fp32":
    want = fp32
else:
    acc = to_bf16(scaled[0])
    for x in scaled[1:]:
        acc = to_bf16(from_bf16(acc) + from_bf16(to_bf16(x)))
    want = from_bf16(acc)

bad = [r for r in range(a.ranks) if not np.array_equal(reduced[r].view(np.uint32), want.view(np.uint32))]
exact = np.sum([x.astype(np.float64) for x in scaled], axis=0)
abs_sum = np.sum([np.abs(x.astype(np.float64)) for x in scaled], axis=0)
err = np.abs(reduced[0].astype(np.float64) - exact)
fails = []
if bad:
    i = int(np.argmax(reduced[bad[0]] != want))
    fails.append(f"ranks {bad} differ from the simulated {a.mode} reduction (element {i}: "
                 f"{reduced[bad[0]][i]!r} vs {want[i]!r})")
if a.mode == "bf16":
    # DP roundings of at most half a bf16 ulp (2^-8 relative) of a partial sum bounded by sum |x|.
    bound = a.ranks * np.ldexp(abs_sum, -8)
    if np.any(err > bound):
        fails.append(f"bf16 reduction off the exact mean by more than {a.ranks} bf16 roundings")
    if np.array_equal(reduced[0], fp32):
        fails.append("the bf16 reduction equals the fp32 one: nothing was rounded")
rel = err / np.maximum(np.abs(exact), 1e-30)
norm = float(np.sqrt(np.sum(want.astype(np.float64) ** 2)))
print(f"{a.mode} DP{a.ranks}: {n} gradients, ranks bitwise equal to the simulation: {not bad}; "
      f"vs exact fp32 mean: max abs {err.max():.3e}, median rel {np.median(rel[exact != 0]):.3e}, "
      f"differing elements {int(np.sum(reduced[0] != fp32))}; simulated norm {norm:.9e}")
if a.norm is not None:
    got = float.fromhex(a.norm)
    if abs(got - norm) > 1e-12 * norm:
        fails.append(f"the run's gradient norm {got!r} is not the simulated {norm!r}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
