#!/usr/bin/env python3
"""Check Megatron's timer blocks (--timing-log-level) in a pretrain_gpt log: after each iteration line one
"(min, max) time across ranks (ms):" block (only the last rank prints it), whose lines name exactly the
expected timers in Megatron's order, each "    <name padded with dots to 48>: (min, max)" with
0 <= min <= max. With --tb, the TensorBoard directory holds "<name>-time" at every logged iteration.

Usage: timer_block_check.py --log LOG --names a,b,c --lines N [--tb DIR --iterations 1,2,4]"""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--names", required=True)
ap.add_argument("--lines", type=int, required=True, help="iteration lines (= blocks) expected")
ap.add_argument("--tb")
ap.add_argument("--iterations", default="")
a = ap.parse_args()
names = a.names.split(",")
text = open(a.log).read().splitlines()
line_re = re.compile(r"^    (.{48}): \((\d+\.\d\d), (\d+\.\d\d)\)$")
blocks, i = [], 0
while i < len(text):
    if text[i].endswith("(min, max) time across ranks (ms):"):
        assert text[i] == "(min, max) time across ranks (ms):", f"block header with a prefix: {text[i]!r}"
        rows = []
        i += 1
        while i < len(text) and text[i].startswith("    "):
            m = line_re.match(text[i])
            assert m, f"not a timer line: {text[i]!r}"
            name = m.group(1).rstrip(".").rstrip()
            assert m.group(1) == (name + " ").ljust(48, "."), f"padding: {text[i]!r}"
            lo, hi = float(m.group(2)), float(m.group(3))
            assert 0 <= lo <= hi, f"min > max: {text[i]!r}"
            rows.append(name)
            i += 1
        blocks.append(rows)
    else:
        i += 1
iters = sum(1 for l in text if re.search(r"iteration +\d+/ +\d+ \|", l))
assert iters == a.lines, f"{iters} iteration lines, expected {a.lines}"
assert len(blocks) == a.lines, f"{len(blocks)} timer blocks for {a.lines} iteration lines"
for rows in blocks:
    assert rows == names, f"timers {rows}, expected {names}"
if a.tb:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(a.tb)
    acc.Reload()
    want = [int(x) for x in a.iterations.split(",")]
    for n in names:
        steps = [e.step for e in acc.Scalars(n + "-time")]
        assert steps == want, f"{n}-time at {steps}, expected {want}"
        assert all(e.value >= 0 for e in acc.Scalars(n + "-time"))
print(f"timer blocks: {len(blocks)} with {', '.join(names)}")
