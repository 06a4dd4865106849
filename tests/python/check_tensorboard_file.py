#!/usr/bin/env python3
"""Open the event file written by the hidden Catch2 test "[.tensorboard_file]" with the tensorboard
package and check every tag, step and value; also re-verify each record's masked CRC-32C with a
bitwise CRC written here (independent of gptrain's table).

Usage: check_tensorboard_file.py LOGDIR"""
import glob
import math
import os
import struct
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_framing(path):
    raw = open(path, "rb").read()
    at, n = 0, 0
    while at < len(raw):
        (length,) = struct.unpack_from("<Q", raw, at)
        (len_crc,) = struct.unpack_from("<I", raw, at + 8)
        assert len_crc == masked(crc32c_bitwise(raw[at:at + 8])), f"record {n}: bad length CRC"
        data = raw[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack_from("<I", raw, at + 12 + length)
        assert data_crc == masked(crc32c_bitwise(data)), f"record {n}: bad data CRC"
        at += 12 + length + 4
        n += 1
    assert at == len(raw), "trailing bytes"
    return n


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    logdir = sys.argv[1]
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    assert len(files) == 1, files
    name = os.path.basename(files[0]).split(".")
    assert name[3].isdigit() and len(name[3]) == 10, name  # unix time %010d
    assert name[-2].isdigit() and name[-1] == "0", name    # pid, writer number
    records = check_framing(files[0])

    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    acc.Reload()
    want = {
        "lm loss": [(s, 11.0 - 0.125 * s) for s in range(1, 51)] + [(60, 4.5)],
        "learning-rate": [(s, 6e-4 * s / 50.0) for s in range(1, 51)] + [(60, 3e-4)],
        "negative step": [(-3, -1.5)],
        "long/" + "x" * 200: [(1000000000000, 3.0e38)],
        "learning-rate vs samples": [(960, 3e-4)],
        "decoupled-learning-rate": [(60, 2e-3)],  # Megatron writes no vs-samples twin of it
        "batch-size": [(60, 16.0)],
        "batch-size vs samples": [(960, 16.0)],
        "lm loss vs samples": [(960, 4.5)],
        "loss-scale": [(60, 1.0)],
        "loss-scale vs samples": [(960, 1.0)],
        "grad-norm": [(60, 0.75)],
        "grad-norm vs samples": [(960, 0.75)],
        "tokens-per-second": [(60, 1234.5)],
        "lm loss validation": [(60, 4.25)],
        "lm loss validation vs samples": [(960, 4.25)],
        "lm loss validation ppl": [(60, math.exp(4.25))],
        "lm loss validation ppl vs samples": [(960, math.exp(4.25))],
    }
    tags = set(acc.Tags()["scalars"])
    assert tags == set(want), f"tags differ: extra {tags - set(want)}, missing {set(want) - tags}"
    count = 0
    for tag, points in want.items():
        events = acc.Scalars(tag)
        got = [(e.step, e.value) for e in events]
        expected = [(s, f32(v)) for s, v in points]
        assert got == expected, f"{tag}: {got[:3]} ... != {expected[:3]} ..."
        times = [e.wall_time for e in events]
        assert all(abs(t - times[0]) < 600 and t > 1.6e9 for t in times), f"{tag}: odd wall times {times[:3]}"
        count += len(events)
    assert records == count + 1, (records, count)  # + the file_version record
    print(f"tensorboard: {len(want)} tags, {count} scalars, {records} records with valid CRCs in {files[0]}")


if __name__ == "__main__":
    main()
