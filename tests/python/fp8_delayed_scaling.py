"""FP8 delayed scaling of a pretrain_gpt run against a numpy transcription of Transformer Engine's rule.

The run writes one line per training step to GPTRAIN_TEST_FP8_TRACE: the step's amaxes (after the max over
ranks) and the scaling state after the update. From the initial state (histories 0, scales 1) this script
applies, step by step, the rule transcribed here -- history[0] takes the step's amax; the history rolls one
slot left, the old history[0] going to the last slot and history[0] restarting at 0; amax = the old
history[0] (most_recent) or the max over the whole old history (max); scale = (fp8 max / amax) / 2^margin,
kept when amax is 0 or not finite, fp32's max when infinite; scale_inv = 1 / scale -- and requires every
state bit for bit, the checkpoint's saved state to be the last one, and, independently of the trace's own
numbers, the weight amaxes a step recorded to be max |W| of the weights the checkpoint saved before it.

  fp8_delayed_scaling.py TRACE CKPT --iteration K --history-len L --margin M --algo max|most_recent
                         --format e4m3|hybrid --layers N
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from convert_common import global_tensors  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("ckpt")
ap.add_argument("--iteration", type=int, required=True, help="a saved iteration K < the trace's steps")
ap.add_argument("--history-len", type=int, required=True)
ap.add_argument("--margin", type=int, required=True)
ap.add_argument("--algo", choices=["max", "most_recent"], required=True)
ap.add_argument("--format", choices=["e4m3", "hybrid"], required=True)
ap.add_argument("--layers", type=int, required=True)
a = ap.parse_args()

f32 = np.float32
L, TENSORS = a.history_len, 12  # per layer: (qkv, proj, fc1, fc2) x (input, weight, output gradient)
STRIDE = L + 2
FMAX = {"e4m3": f32(448.0), "e5m2": f32(57344.0)}


def update(e, fmax):
    h = e[:L]
    last = h[0]
    rolled = np.concatenate([h[1:], [last]]).astype(f32)
    amax = np.max(rolled) if a.algo == "max" else last
    e[:L] = rolled
    e[0] = f32(0)
    s = e[L]
    if np.isfinite(amax) and amax > 0:
        s = f32(f32(fmax / amax) / f32(2.0 ** a.margin))
    if np.isinf(s):
        s = np.finfo(f32).max
    e[L], e[L + 1] = s, f32(1) / s


lines = [json.loads(x) for x in open(a.trace)]
assert len(lines) > a.iteration, f"{a.trace}: {len(lines)} steps, need more than {a.iteration}"
state = np.zeros(a.layers * TENSORS * STRIDE, dtype=f32)
for t in range(a.layers * TENSORS):
    state[t * STRIDE + L] = state[t * STRIDE + L + 1] = 1
for step, rec in enumerate(lines, 1):
    amax = np.array(rec["amax"], dtype=f32)
    assert amax.size == a.layers * TENSORS and np.all(amax > 0), f"step {step}: amaxes {amax}"
    for t in range(a.layers * TENSORS):
        e = state[t * STRIDE:(t + 1) * STRIDE]
        e[0] = amax[t]
        grad = t % 3 == 2
        update(e, FMAX["e5m2" if grad and a.format == "hybrid" else "e4m3"])
    got = np.array(rec["state"], dtype=f32)
    if not np.array_equal(got.view(np.uint32), state.view(np.uint32)):
        bad = np.nonzero(got.view(np.uint32) != state.view(np.uint32))[0][:5]
        sys.exit(f"FAIL: step {step}: state differs from the transcription at {bad}: {got[bad]} vs {state[bad]}")
print(f"{len(lines)} steps: the scaling state follows the transcribed rule bit for bit "
      f"(last scales {sorted(set(float(x) for x in state[L::STRIDE]))[:4]}...)")

# The checkpoint's state is the last step's (the run saved at its end).
meta = json.load(open(sorted(glob.glob(os.path.join(a.ckpt, "iter_*", "metadata.json")))[-1]))["fp8"]
saved = np.array([float(v) for layer in range(a.layers) for v in meta["state"][str(layer)]], dtype=f32)
assert np.array_equal(saved.view(np.uint32), state.view(np.uint32)), "the checkpoint's FP8 state is not the last step's"
assert meta["amax_history_len"] == L and meta["margin"] == a.margin and meta["format"] == a.format, meta

# Step K + 1 quantised the weights the checkpoint saved at iteration K: its weight amaxes are their max |w|.
files = glob.glob(os.path.join(a.ckpt, f"iter_{a.iteration:07d}", "model_*.safetensors"))
weights = global_tensors(files)
GEMMS = {0: ("linear_qkv",), 1: ("linear_proj",), 2: ("linear_fc1",), 3: ("linear_fc2",)}
rec = np.array(lines[a.iteration]["amax"], dtype=f32)
checked = 0
for layer in range(a.layers):
    for g, keys in GEMMS.items():
        names = [n for n in weights if n.endswith("weight") and f".{layer}." in n and any(k in n for k in keys)
                 and "norm" not in n]
        assert names, f"no weight of GEMM {keys[0]} of layer {layer} among {sorted(weights)[:12]}"
        w = max(float(weights[n].abs().max()) for n in names)
        assert f32(w) == rec[layer * TENSORS + g * 3 + 1], (layer, keys[0], names, w, rec[layer * TENSORS + g * 3 + 1])
        checked += 1
print(f"weight amaxes of step {a.iteration + 1} = max |w| of the iteration-{a.iteration} checkpoint ({checked} GEMMs)")
