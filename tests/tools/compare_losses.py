"""Compares two capture_losses.sh recordings: per command line (paths of the build, source and scratch
directories masked, world size and rank kept), the training and validation losses and grad norms each run
printed (log lines, and the metrics file's full-precision records). Prints how many command lines agree bit
for bit, and every difference: the first differing record, and the largest relative difference of the grad
norms and of the losses separately. A run that one capture continued further than the other, every record
both have being equal (a run stopped by a signal or a failed write at a moment of the machine's choosing), is
listed as STOPPED ELSEWHERE and is not a difference. Exit status 1 when a loss differs or a command line is
missing."""
import json
import os
import re
import sys

TMP = re.compile(r"/tmp/tmp\.[A-Za-z0-9]+|/tmp/[A-Za-z0-9_.-]*\.[A-Za-z0-9]{6,}")


def load(d):
    runs = {}
    source = ""
    if os.path.exists(os.path.join(d, "SOURCE")):
        source = open(os.path.join(d, "SOURCE")).read().strip()
    for f in sorted(x for x in os.listdir(d) if x.endswith(".log")):
        lines = open(os.path.join(d, f), errors="replace").read().splitlines()
        if len(lines) < 2 or not lines[0].startswith("ARGS:"):
            continue
        args = TMP.sub("/tmp/X", lines[0][5:].strip())
        args = re.sub(r"/\S*/(build[^/\s]*)/", "/BUILD/", args)
        if source:
            args = args.replace(source + "/", "/SRC/")
        key = args + " @rank " + lines[1][6:].strip()
        recs = []
        for l in lines[2:]:
            m = re.search(r"iteration\s+(\d+)/\s*\d+ \|.*lm loss: ([0-9.E+-]+) \|", l)
            if m:
                g = re.search(r"grad norm: ([0-9.E+-]+)", l)
                recs.append(["log", int(m.group(1)), float(m.group(2)), float(g.group(1)) if g else None])
                continue
            m = re.search(r"(validation|test) loss at .* \| lm loss value: ([0-9.E+-]+)", l)
            if m:
                recs.append([m.group(1), 0, float(m.group(2)), None])
                continue
            m = re.match(r"(iter|eval) (\d+) loss (\S+)(?: grad_norm (\S+))?", l)
            if m:
                recs.append([m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4)) if m.group(4) else None])
        jf = os.path.join(d, f + ".jsonl")
        if os.path.exists(jf):
            for l in open(jf):
                r = json.loads(l)
                for name, v in sorted(r.get("losses", {}).items()):
                    recs.append(["json:" + r.get("event", "") + ":" + name, r.get("iteration", 0), v, r.get("grad_norm")])
        if recs:
            runs.setdefault(key, []).append(recs)
    return {k: sorted(v) for k, v in runs.items()}


def prefix_equal(rb, ra):
    """Every record the two runs both have (by kind and iteration) is equal."""
    kb, ka = {(x[0], x[1]): x for x in rb}, {(x[0], x[1]): x for x in ra}
    return all(kb[k] == ka[k] for k in set(kb) & set(ka))


before, after = load(sys.argv[1]), load(sys.argv[2])
same, stopped, bad = 0, 0, False
worst_loss = worst_norm = 0.0
for key, b in sorted(before.items()):
    a = after.get(key)
    if a is None:
        print(f"MISSING after: {key[:200]}")
        bad = True
        continue
    if a == b:
        same += 1
        continue
    if len(a) == len(b) and all(prefix_equal(rb, ra) for rb, ra in zip(b, a)):
        stopped += 1
        print(f"STOPPED ELSEWHERE: {key[:200]}\n   {[len(r) for r in b]} records before, {[len(r) for r in a]} after, "
              "equal where both ran")
        continue
    first = None
    for rb, ra in zip(b, a):
        for x, y in zip(rb, ra):
            if x[2] != y[2]:
                worst_loss = max(worst_loss, abs(x[2] - y[2]) / abs(x[2]))
                bad = True
            if x[3] is not None and y[3] is not None and x[3] != y[3]:
                worst_norm = max(worst_norm, abs(x[3] - y[3]) / abs(x[3]))
            if x != y and first is None:
                first = (x, y)
    print(f"DIFFERENT: {key[:200]}\n   first: {first}")
print(f"{same} of {len(before)} command lines identical, {stopped} stopped elsewhere; largest relative difference: "
      f"losses {worst_loss:.3g}, "
      f"grad norms {worst_norm:.3g}; {len(set(after) - set(before))} command lines only in the second capture")
sys.exit(1 if bad else 0)
