#!/usr/bin/env python3
"""Megatron's log-line format strings (docs/megatron-compat.md §5) applied by Python itself to random values,
for the hidden Catch2 test "[.log_line_reference]" (tests/unit/core/test_log_line_reference.cpp) to
compare with gptrain's formatter byte for byte. Times are UTC (the test runs with TZ=UTC).

Usage: log_line_ref.py OUT.json [N]"""
import datetime
import json
import math
import random
import sys


def rand_float(rng):
    kind = rng.random()
    if kind < 0.05:
        return rng.choice([0.0, 0.05, 0.25, 0.5, 1.5, 2.5, 0.0005, 0.0015, 1e-300, 1e300])
    if kind < 0.10:
        return float(rng.randint(0, 10**6)) + rng.choice([0.05, 0.15, 0.25, 0.35, 0.45, 0.0005])
    return 10 ** rng.uniform(-12, 12) * rng.random()


def iteration_line(v):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=v["time_us"])
    s = f" [{t.strftime('%Y-%m-%d %H:%M:%S.%f')}]"
    s += ' iteration {:8d}/{:8d} |'.format(v["iteration"], v["train_iters"])
    s += ' consumed samples: {:12d} |'.format(v["consumed_samples"])
    if v["skipped_samples"] > 0:
        s += ' skipped samples: {:12d} |'.format(v["skipped_samples"])
    s += ' elapsed time per iteration (ms): {:.1f} |'.format(v["elapsed_ms"])
    if v.get("throughput") is not None:
        s += f' throughput per GPU (TFLOP/s/GPU): {v["throughput"]:.1f} |'
    if v.get("lr") is not None:
        s += f' learning rate: {v["lr"]:.6E} |'
    s += f' global batch size: {v["gbs"]:5d} |'
    for name, avg in v["losses"]:
        if avg >= 0.0:
            s += ' {}: {:.6E} |'.format(name, avg)
    s += f' loss scale: {v["loss_scale"]:.1f} |'
    if v.get("grad_norm") is not None:
        s += f' grad norm: {v["grad_norm"]:.3f} |'
    if v.get("num_zeros") is not None:
        s += f' num zeros: {v["num_zeros"]} |'
    if v.get("params_norm") is not None:
        s += f' params norm: {v["params_norm"]:.3f} |'
    s += ' number of skipped iterations: {:3d} |'.format(v["skipped_iters"])
    s += ' number of nan iterations: {:3d} |'.format(v["nan_iters"])
    return s


def validation_line(prefix, losses):
    s = f' validation loss at {prefix} | '
    for key, value in losses:
        s += '{} value: {:.6E} | '.format(key, value)
        s += '{} PPL: {:.6E} | '.format(key, math.exp(min(20, value)))
    return s


def main():
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rng = random.Random(5)
    maybe = lambda x: x if rng.random() < 0.7 else None  # noqa: E731
    out = []
    for _ in range(n):
        v = {
            "time_us": rng.randint(0, 4 * 10**15),
            "iteration": rng.randint(0, 10**9), "train_iters": rng.randint(0, 10**9),
            "consumed_samples": rng.randint(0, 10**13),
            "skipped_samples": rng.choice([0, 0, rng.randint(1, 10**6)]),
            "elapsed_ms": rand_float(rng), "throughput": maybe(rand_float(rng)), "lr": maybe(rand_float(rng)),
            "gbs": rng.randint(1, 10**6),
            "losses": [["lm loss", rng.choice([rand_float(rng), -rand_float(rng), rng.uniform(0, 12)])]]
                      + ([["mtp_1 loss", rng.uniform(0, 12)]] if rng.random() < 0.3 else []),
            "loss_scale": rng.choice([1.0, 2.0 ** rng.randint(0, 32), rand_float(rng)]),
            "grad_norm": maybe(rand_float(rng)), "num_zeros": maybe(rng.randint(0, 10**9)),
            "params_norm": maybe(rand_float(rng)),
            "skipped_iters": rng.randint(0, 2000), "nan_iters": rng.randint(0, 2000),
        }
        prefix = rng.choice(["iteration {}", "iteration {} on validation set", "iteration {} on test set"])
        prefix = prefix.format(v["iteration"])
        val = [["lm loss", rng.choice([rng.uniform(0, 30), rand_float(rng)])]]
        out.append({"values": v, "line": iteration_line(v), "prefix": prefix, "val_losses": val,
                    "val_line": validation_line(prefix, val)})
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh)
    print(f"log line reference: {n} random lines -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
