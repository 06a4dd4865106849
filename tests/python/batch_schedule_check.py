"""Checks a pretrain_gpt --metrics-file against Megatron's batch-size rules, transcribed here for the test.

  schedule JSONL --gbs G --mbs M --dp D --train-samples S [--rampup START INCR SAMPLES | --steps "T:B ..."
           --seq-length L] [--decrease]
      every train record's global batch size, consumed samples and train_iters follow the rule
      (num_microbatches_calculator.py and update_train_iters), and the log has every iteration.
  same JSONL_A JSONL_B FIRST LAST
      iterations FIRST..LAST of the two runs have identical losses, grad norms, learning rates,
      batch sizes and consumed samples (bitwise: the JSON numbers are compared as written).
"""
import argparse
import json
import sys


def records(path, event="train"):
    return [r for r in map(json.loads, open(path)) if r["event"] == event]


def suffixed(text):
    text = text.strip().upper()
    mult = {"T": 10**12, "B": 10**9, "M": 10**6, "K": 10**3}.get(text[-1:], 1)
    if mult != 1:
        text = text[:-1]
    return int(float(text) * mult)


class Rule:
    """Megatron's current global batch after `consumed` samples, and update_train_iters."""

    def __init__(self, a):
        self.gbs, self.round, self.decrease = a.gbs, a.mbs * a.dp, a.decrease
        self.ramp = a.rampup
        self.steps = None
        if a.steps:
            pairs = [e.split(":") for e in a.steps.replace(",", " ").split()]
            self.steps = sorted((suffixed(t) // a.seq_length, suffixed(b)) for t, b in pairs)
        if self.ramp:
            start, incr, samples = self.ramp
            self.per_increment = samples / ((self.gbs - start) // incr)

    def batch(self, consumed):
        if self.ramp:
            start, incr, samples = self.ramp
            if consumed > samples:
                return self.gbs
            return start + int(consumed / self.per_increment) * incr
        if self.steps:
            return [b for t, b in self.steps if consumed >= t][-1]
        return self.gbs

    def running(self, consumed):
        b = self.batch(consumed)
        if self.decrease:
            return b // self.round * self.round
        assert b % self.round == 0, b
        return b

    def train_iters(self, train_samples):
        iters = consumed = 0
        if self.ramp:
            while consumed <= self.ramp[2] and consumed <= train_samples:
                consumed += self.batch(consumed)
                iters += 1
            if train_samples > consumed:
                iters += (train_samples - consumed) // self.gbs
            return iters
        # Step schedule (gptrain's rule): the iterations whose whole batch fits.
        while consumed + self.batch(consumed) <= train_samples:
            consumed += self.batch(consumed)
            iters += 1
        return iters


def check_schedule(a):
    rule = Rule(a)
    recs = records(a.jsonl)
    want_iters = rule.train_iters(a.train_samples)
    assert [r["iteration"] for r in recs] == list(range(1, want_iters + 1)), (
        "iterations", [r["iteration"] for r in recs], want_iters)
    consumed = 0
    sizes = []
    for r in recs:
        batch = rule.running(consumed)
        consumed += batch
        sizes.append(batch)
        got = (r["global_batch_size"], r["consumed_samples"], r["train_iters"])
        assert got == (batch, consumed, want_iters), (r["iteration"], got, (batch, consumed, want_iters))
    assert len(set(sizes)) > 1, "the batch size never changed: " + str(sizes)
    print(f"{len(recs)} iterations, batch sizes {sizes}, {consumed} samples: as Megatron's rule")


def check_same(a):
    keys = ("losses", "grad_norm", "learning_rate", "global_batch_size", "consumed_samples")
    x = {r["iteration"]: r for r in records(a.a)}
    y = {r["iteration"]: r for r in records(a.b)}
    for it in range(a.first, a.last + 1):
        assert it in x and it in y, f"iteration {it} missing"
        for k in keys:
            assert x[it].get(k) == y[it].get(k), (it, k, x[it].get(k), y[it].get(k))
    print(f"iterations {a.first}-{a.last} identical ({', '.join(keys)})")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("schedule")
    s.add_argument("jsonl")
    s.add_argument("--gbs", type=int, required=True)
    s.add_argument("--mbs", type=int, required=True)
    s.add_argument("--dp", type=int, default=1)
    s.add_argument("--train-samples", type=int, required=True)
    s.add_argument("--rampup", type=int, nargs=3)
    s.add_argument("--steps")
    s.add_argument("--seq-length", type=int)
    s.add_argument("--decrease", action="store_true")
    c = sub.add_parser("same")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("first", type=int)
    c.add_argument("last", type=int)
    a = p.parse_args()
    (check_schedule if a.cmd == "schedule" else check_same)(a)


if __name__ == "__main__":
    sys.exit(main())
