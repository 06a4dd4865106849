"""Checks the tables pretrain_gpt --profile prints on CPU (one per profiled rank).

A table starts with "profile of rank R: iterations A..B (N iterations) (S s wall):" and lists every
range as "<indent>name count total_ms mean_ms pct", two spaces of indent per nesting level; lines of a
non-primary rank carry the "[rank R] " prefix. Checks: exactly the ranks of --ranks printed a table, for
iterations start+1..end; the counts of the loop's and the model's ranges follow from the iterations in
the window, the micro-batches per iteration and the layers (every forward and backward of a micro-batch
runs every layer once); a range's total is at least the sum of its children's, and means are totals
over counts.
"""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--ranks", required=True, help="comma-separated ranks that must print a table")
ap.add_argument("--start", type=int, required=True)
ap.add_argument("--end", type=int, required=True)
ap.add_argument("--micro-batches", type=int, required=True, help="per iteration on each rank")
ap.add_argument("--layers", type=int, required=True)
ap.add_argument("--evaluations", type=int, default=0, help="evaluations inside the window")
ap.add_argument("--eval-iters", type=int, default=0)
ap.add_argument("--dp", type=int, default=1)
a = ap.parse_args()

HEADER = re.compile(r"^profile of rank (\d+): iterations (\d+)\.\.(\d+) \((\d+) iterations?\) \(([0-9.]+) s wall\):$")
ROW = re.compile(r"^( *)(\S(?:.*\S)?)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$")
PREFIX = re.compile(r"^\[rank (\d+)\] ")

lines_of = {}  # rank prefix ("" for the primary rank) -> its lines in order
for line in open(a.log, errors="replace"):
    line = line.rstrip("\n")
    m = PREFIX.match(line)
    key = m.group(1) if m else ""
    lines_of.setdefault(key, []).append(line[m.end():] if m else line)

tables = {}  # rank -> {"header": (...), "rows": {path: (count, total, mean)}, "children": {path: [paths]}}
for lines in lines_of.values():
    i = 0
    while i < len(lines):
        h = HEADER.match(lines[i])
        if not h:
            i += 1
            continue
        rank = int(h.group(1))
        rows, children, stack = {}, {}, []
        i += 2  # the column names
        while i < len(lines):
            r = ROW.match(lines[i])
            if not r:
                break
            depth = len(r.group(1)) // 2
            stack = stack[:depth] + [r.group(2)]
            path = "/".join(stack)
            rows[path] = (int(r.group(3)), float(r.group(4)), float(r.group(5)))
            children.setdefault("/".join(stack[:-1]), []).append(path)
            i += 1
        tables[rank] = {"header": h.groups(), "rows": rows, "children": children}

fails = []
want_ranks = sorted(int(x) for x in a.ranks.split(","))
if sorted(tables) != want_ranks:
    fails.append(f"tables from ranks {sorted(tables)}, expected {want_ranks}")
n = a.end - a.start
m = a.micro_batches
expect = {
    "train-step": n,
    "train-step/data-fetch": n,
    "train-step/forward-backward": n,
    "train-step/forward-backward/forward": n * m,
    "train-step/forward-backward/forward/embedding": n * m,
    "train-step/forward-backward/forward/output-layer": n * m,
    "train-step/forward-backward/backward": n * m,
    "train-step/forward-backward/backward/output-layer": n * m,
    "train-step/forward-backward/backward/embedding": n * m,
    "train-step/forward-backward/loss-reduce": n,
    "train-step/forward-backward/model-parallel-grad-sync": n,
    "train-step/forward-backward/dp-grad-reduce": n,
    "train-step/forward-backward/dp-grad-reduce/dp-wait": n,
    "train-step/grad-norm": n,
    "train-step/optimizer-step": n,
}
for layer in range(a.layers):
    expect[f"train-step/forward-backward/forward/layer {layer}"] = n * m
    expect[f"train-step/forward-backward/backward/layer {layer}"] = n * m
if a.evaluations:
    expect["evaluate"] = a.evaluations
    expect["evaluate/forward"] = a.evaluations * a.eval_iters * m
    expect["evaluate/forward/layer 0"] = a.evaluations * a.eval_iters * m
if a.dp > 1:
    expect["train-step/forward-backward/dp-grad-reduce/dp-bucket-launch"] = None  # >= n: every bucket, every step

for rank, t in sorted(tables.items()):
    got_rank, first, last, count, wall = t["header"]
    if (int(first), int(last), int(count)) != (a.start + 1, a.end, n):
        fails.append(f"rank {rank}: header says iterations {first}..{last} ({count}), expected {a.start + 1}..{a.end}")
    rows = t["rows"]
    for path, c in expect.items():
        if path not in rows:
            fails.append(f"rank {rank}: no range {path}")
        elif c is None:
            if rows[path][0] < n or rows[path][0] % n:
                fails.append(f"rank {rank}: {path} counted {rows[path][0]}, expected a multiple of {n}")
        elif rows[path][0] != c:
            fails.append(f"rank {rank}: {path} counted {rows[path][0]}, expected {c}")
    for parent, kids in t["children"].items():
        if not parent:
            continue
        total = rows[parent][1]
        inner = sum(rows[k][1] for k in kids)
        if inner > total + 0.002 * len(kids) + 1e-6 * total:
            fails.append(f"rank {rank}: {parent} took {total} ms, less than its ranges' {inner} ms")
    for path, (c, total, mean) in rows.items():
        if c <= 0 or total < 0 or abs(mean - total / c) > 0.0015:
            fails.append(f"rank {rank}: {path}: count {c}, total {total}, mean {mean} do not agree")
    # The header prints the wall time in seconds to 3 decimals: up to 0.5 ms of rounding.
    if rows.get("train-step", (0, 0.0, 0))[1] > float(wall) * 1e3 + 0.5 + 0.01:
        fails.append(f"rank {rank}: train-step's time exceeds the window's wall time")
    step = rows.get("train-step", (0, 0.0, 0))
    print(f"rank {rank}: iterations {first}..{last}, {len(rows)} ranges, train-step {step[1]:.3f} ms of "
          f"{float(wall) * 1e3:.3f} ms wall, forward x{rows.get('train-step/forward-backward/forward', (0,))[0]}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
