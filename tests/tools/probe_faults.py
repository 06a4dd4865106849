#!/usr/bin/env python3
"""A fault and bad-input probe of the gptrain tools, as a careful user and a cluster would try them.

    python3 tests/tools/probe_faults.py BIN_DIR WORK_DIR [--only SUBSTRING] [--list]

Each case prepares a situation (a bad flag value, a damaged file, a signal, a full or read-only disk, a
resource limit), runs one tool, and classifies what happened:

    ok          what a user should see: the run succeeded where it should (with a warning naming the fault
                where one is expected), or stopped with a non-zero exit and a message holding every
                expected word (the flag, file or cause)
    crash       killed by a signal, an uncaught C++ exception ("terminate called", "std::bad_alloc"), or
                a sanitizer report
    hang        still running after the case's time limit
    silent      exit 0 where the input or fault should have been refused or reported
    unclear     refused, but the message misses the expected words
    lost        a user's file (checkpoint, dataset) was changed, removed or left half-written
    failed      an error where the run should have succeeded

It prints one line per case and a table of counts by kind (fault injected / bad input) and outcome.
Cases needing root (tmpfs mounts) are skipped, and counted as such, without it. Not a CI test: it takes
a few minutes and mounts file systems; docs/testing.md says when to run it.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

TINY = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", "16",
        "--max-position-embeddings", "16", "--micro-batch-size", "2", "--global-batch-size", "4",
        "--lr", "1e-3", "--log-interval", "1", "--seed", "3"]
MOCK = TINY + ["--mock-data", "--vocab-size", "97"]
GPT2 = TINY + ["--mock-data", "--tokenizer-type", "GPT2BPETokenizer"]  # the shipped vocabulary: convertible


class Case:
    def __init__(self, name, kind, cmd, expect="error", needles=(), setup=None, post=None, timeout=60,
                 env=None, root=False, shell=False, signal_at=None, preexec=None):
        self.name, self.kind, self.cmd, self.expect, self.needles = name, kind, cmd, expect, list(needles)
        self.setup, self.post, self.timeout, self.env, self.root = setup, post, timeout, env, root
        self.shell, self.signal_at, self.preexec = shell, signal_at, preexec


def digest_tree(path):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(os.path.relpath(p, path).encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


class Probe:
    def __init__(self, bin_dir, work):
        self.bin, self.work = os.path.abspath(bin_dir), os.path.abspath(work)
        self.cases = []
        self.is_root = os.geteuid() == 0

    def tool(self, name):
        return os.path.join(self.bin, name)

    def pg(self, *args):
        return [self.tool("pretrain_gpt"), *args]

    def add(self, *a, **k):
        self.cases.append(Case(*a, **k))

    # ---- shared fixtures -------------------------------------------------------------------------
    def fixtures(self):
        w = self.work
        shutil.rmtree(w, ignore_errors=True)
        os.makedirs(w)
        import random
        r = random.Random(1)
        with open(f"{w}/ids.jsonl", "w") as f:
            for _ in range(80):
                f.write(json.dumps({"text": " ".join(str(r.randint(0, 96)) for _ in range(40))}) + "\n")
        run([self.tool("preprocess_data"), "--input", f"{w}/ids.jsonl", "--output-prefix", f"{w}/ids",
             "--tokenizer-type", "NullTokenizer", "--vocab-size", "97", "--log-interval", "0"], check=True)
        self.data = f"{w}/ids_text_document"
        self.real = TINY + ["--tokenizer-type", "NullTokenizer", "--vocab-size", "97", "--split", "90,10,0"]
        run(self.pg(*MOCK, "--train-iters", "4", "--save", f"{w}/ckpt", "--save-interval", "2"), check=True)
        self.ckpt = f"{w}/ckpt"
        run(self.pg(*GPT2, "--train-iters", "2", "--save", f"{w}/ckpt-gpt2", "--save-interval", "2"), check=True)
        self.gpt2_ckpt = f"{w}/ckpt-gpt2"

    def fresh_ckpt(self, name):
        d = f"{self.work}/{name}"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(self.ckpt, d)
        return d

    def fresh_data(self, name):
        for ext in (".bin", ".idx"):
            shutil.copy(self.data + ext, f"{self.work}/{name}{ext}")
        return f"{self.work}/{name}"

    # ---- the cases -------------------------------------------------------------------------------
    def build(self):
        w = self.work
        pg = self.pg
        # Flag values a user can mistype: each must be refused naming the flag.
        for flag, value in [("--num-layers", "0"), ("--num-layers", "-2"), ("--hidden-size", "0"),
                            ("--hidden-size", "30"), ("--num-attention-heads", "0"), ("--seq-length", "0"),
                            ("--micro-batch-size", "0"), ("--global-batch-size", "5"), ("--lr", "nan"),
                            ("--lr", "-1"), ("--lr", "inf"), ("--min-lr", "nan"), ("--clip-grad", "-1"),
                            ("--clip-grad", "nan"), ("--weight-decay", "nan"), ("--adam-beta1", "1.5"),
                            ("--adam-beta2", "-0.1"), ("--adam-eps", "-1"), ("--init-method-std", "-0.02"),
                            ("--init-method-std", "nan"), ("--train-iters", "-5"), ("--log-interval", "0"),
                            ("--hidden-dropout", "1.5"), ("--attention-dropout", "-0.1"), ("--vocab-size", "0"),
                            ("--make-vocab-size-divisible-by", "0"), ("--num-query-groups", "3"),
                            ("--ffn-hidden-size", "0"), ("--norm-epsilon", "-1"), ("--rotary-percent", "2"),
                            ("--seed", "abc"), ("--seq-length", "99999999999"), ("--eval-interval", "0"),
                            ("--save-interval", "-1"), ("--lr-warmup-iters", "-3"), ("--exit-interval", "-1"),
                            ("--loss-scale", "-4"), ("--rotary-base", "0"), ("--micro-batch-size", "1e3")]:
            args = [a for a in MOCK]
            if flag in args:
                i = args.index(flag)
                del args[i:i + 2]
            if flag in ("--num-query-groups",):
                args += ["--group-query-attention"]
            if flag in ("--rotary-percent", "--rotary-base"):
                args += ["--position-embedding-type", "rope"]
            cmd = pg(*args, "--train-iters", "2", flag, value)
            if flag == "--train-iters":
                cmd = pg(*args, flag, value)
            self.add(f"flag {flag} {value}", "input", cmd, needles=[flag.lstrip("-").split("-")[0]])
        self.add("flag --position-embedding-type rope with odd head dim", "input",
                 pg(*MOCK, "--train-iters", "2", "--position-embedding-type", "rope", "--hidden-size", "36",
                    "--num-attention-heads", "4"), needles=["rotary"])
        self.add("flag --split letters", "input", pg(*self.real, "--train-iters", "2", "--data-path", self.data,
                                                     "--split", "a,b,c"), needles=["--split"])
        self.add("flag --split 0,0,0", "input", pg(*self.real, "--train-iters", "2", "--data-path", self.data,
                                                   "--split", "0,0,0"), needles=["split"])
        self.add("flag --data-path odd weights", "input",
                 pg(*self.real, "--train-iters", "2", "--data-path", "0.5", self.data, "0.5"), needles=["0.5.idx"])
        self.add("flag --data-path negative weight", "input",
                 pg(*self.real, "--train-iters", "2", "--data-path", "-1", self.data, "2", self.data),
                 needles=["weight"])
        self.add("flag --data-path missing file", "input",
                 pg(*self.real, "--train-iters", "2", "--data-path", f"{w}/nothing"), needles=["nothing"])
        self.add("flag --data-path a directory", "input",
                 pg(*self.real, "--train-iters", "2", "--data-path", w), needles=[w])
        self.add("flag --tokenizer-type bogus", "input", pg(*TINY, "--train-iters", "2", "--mock-data",
                                                            "--tokenizer-type", "Bogus"), needles=["Bogus"])
        self.add("flag --vocab-file a directory", "input",
                 pg(*TINY, "--train-iters", "2", "--data-path", self.data, "--tokenizer-type", "GPT2BPETokenizer",
                    "--vocab-file", w, "--merge-file", w), needles=[w])
        self.add("--config missing", "input", pg("--config", f"{w}/none.yaml"), needles=["none.yaml"])
        self.add("--config a directory", "input", pg("--config", w), needles=["--config"])
        self.add("--config empty file", "input", pg("--config", "/dev/null"), needles=["required"])
        self.add("--config binary garbage", "input", pg("--config", f"{w}/garbage.yaml"),
                 setup=lambda: open(f"{w}/garbage.yaml", "wb").write(os.urandom(300)), needles=["garbage.yaml"])
        self.add("--config deeply nested", "input", pg("--config", f"{w}/deep.yaml"),
                 setup=lambda: open(f"{w}/deep.yaml", "w").write("num_layers: " + "[" * 5000 + "]" * 5000 + "\n"),
                 needles=["deep.yaml"])
        self.add("flag path with newline and unicode", "input",
                 pg(*MOCK, "--train-iters", "2", "--save", f"{w}/ü ckpt\nx", "--save-interval", "2"), expect="ok")
        self.add("flag very long path", "input",
                 pg(*MOCK, "--train-iters", "2", "--save", f"{w}/" + "d" * 300 + "/x", "--save-interval", "2"),
                 needles=["--save"])

        # Datasets damaged on disk.
        def damaged(name, mutate, needles):
            prefix = f"{w}/{name}"
            def setup():
                self.fresh_data(name)
                mutate(prefix)
            self.add(f"dataset {name}", "fault", pg(*self.real, "--train-iters", "2", "--data-path", prefix,
                                                     "--data-cache-path", f"{w}/cache-{name}"),
                     setup=setup, needles=[name])
        def truncate(path, size):
            with open(path, "r+b") as f:
                f.truncate(size)
        def poke(path, at, data):
            with open(path, "r+b") as f:
                f.seek(at)
                f.write(data)
        damaged("bin_truncated", lambda p: truncate(p + ".bin", 100), [])
        damaged("bin_empty", lambda p: truncate(p + ".bin", 0), [])
        damaged("idx_truncated", lambda p: truncate(p + ".idx", 40), [])
        damaged("idx_bad_magic", lambda p: poke(p + ".idx", 0, b"NOTANIDX"), [])
        damaged("idx_bad_version", lambda p: poke(p + ".idx", 9, struct.pack("<Q", 7)), [])
        damaged("idx_bad_dtype", lambda p: poke(p + ".idx", 17, bytes([42])), [])
        damaged("idx_huge_count", lambda p: poke(p + ".idx", 18, struct.pack("<Q", 2 ** 62)), [])
        damaged("idx_lengths_garbage", lambda p: poke(p + ".idx", 34, os.urandom(64)), [])
        damaged("bin_is_fifo", lambda p: (os.remove(p + ".bin"), os.mkfifo(p + ".bin")), [])
        damaged("idx_is_directory", lambda p: (os.remove(p + ".idx"), os.mkdir(p + ".idx")), [])
        damaged("bin_symlink_loop", lambda p: (os.remove(p + ".bin"), os.symlink(p + ".bin", p + ".bin")), [])
        damaged("idx_of_other_dataset", lambda p: open(p + ".idx", "wb").write(
            open(self.data + ".idx", "rb").read()[:-8] + struct.pack("<q", 999)), [])

        # The sample-index cache: partly written, damaged, not writable.
        def cache_case(name, mutate, expect="ok", needles=()):
            cache = f"{w}/cache-{name}"
            def setup():
                shutil.rmtree(cache, ignore_errors=True)
                run(pg(*self.real, "--train-iters", "2", "--data-path", self.data, "--data-cache-path", cache),
                    check=True)
                mutate(cache)
            self.add(f"index cache {name}", "fault", pg(*self.real, "--train-iters", "2", "--data-path", self.data,
                                                        "--data-cache-path", cache),
                     setup=setup, expect=expect, needles=needles)
        def each_npy(cache, f):
            for root, _, files in os.walk(cache):
                for n in files:
                    if n.endswith(".npy"):
                        f(os.path.join(root, n))
        cache_case("npy_truncated", lambda c: each_npy(c, lambda p: truncate(p, 64)))
        cache_case("npy_garbage", lambda c: each_npy(c, lambda p: poke(p, 130, os.urandom(32))))
        cache_case("npy_zero_length", lambda c: each_npy(c, lambda p: truncate(p, 0)))
        cache_case("read_only_dir", lambda c: (shutil.rmtree(c), os.makedirs(c), os.chmod(c, 0o500)))
        cache_case("is_a_file", lambda c: (shutil.rmtree(c), open(c, "w").write("x")), expect="warn",
                   needles=["cannot write the index cache"])
        cache_case("description_garbage", lambda c: [open(os.path.join(r, n), "w").write("{]")
                                                     for r, _, fs in os.walk(c) for n in fs if n.endswith(".json")])

        # Checkpoints damaged on disk: refused naming the file, or recovered with a line; never lost.
        def ckpt_case(name, mutate, expect="error", needles=(), extra=()):
            d = f"{w}/ck-{name}"
            def setup():
                self.fresh_ckpt(f"ck-{name}")
                mutate(d)
            self.add(f"checkpoint {name}", "fault", pg(*MOCK, "--train-iters", "4", "--load", d, *extra),
                     setup=setup, expect=expect, needles=needles)
        tracker = "latest_checkpointed_iteration.txt"
        def write(path, text):
            with open(path, "w") as f:
                f.write(text)
        ckpt_case("tracker_garbage", lambda d: write(f"{d}/{tracker}", "banana"), needles=[tracker])
        ckpt_case("tracker_negative", lambda d: write(f"{d}/{tracker}", "-5"), needles=[tracker])
        ckpt_case("tracker_empty", lambda d: write(f"{d}/{tracker}", ""), needles=[tracker])
        ckpt_case("tracker_huge", lambda d: write(f"{d}/{tracker}", "99999999999999999999"), needles=[tracker])
        ckpt_case("tracker_points_nowhere", lambda d: write(f"{d}/{tracker}", "8"), needles=["iter_0000008"])
        ckpt_case("tracker_whitespace", lambda d: write(f"{d}/{tracker}", " 4 \n\n"), expect="ok")
        ckpt_case("tracker_is_directory", lambda d: (os.remove(f"{d}/{tracker}"), os.mkdir(f"{d}/{tracker}")),
                  needles=[tracker])
        ckpt_case("metadata_truncated", lambda d: truncate(f"{d}/iter_0000004/metadata.json", 20),
                  needles=["metadata.json"])
        ckpt_case("metadata_not_json", lambda d: write(f"{d}/iter_0000004/metadata.json", "\x00\x01"),
                  needles=["metadata.json"])
        ckpt_case("metadata_missing", lambda d: os.remove(f"{d}/iter_0000004/metadata.json"),
                  needles=["metadata.json"])
        def model_file(d):
            return [os.path.join(d, "iter_0000004", n) for n in os.listdir(f"{d}/iter_0000004")
                    if n.startswith("model") and n.endswith(".safetensors")][0]
        ckpt_case("safetensors_header_huge", lambda d: poke(model_file(d), 0, struct.pack("<Q", 2 ** 60)),
                  needles=["safetensors"])
        ckpt_case("safetensors_header_garbage", lambda d: poke(model_file(d), 8, b"}}}}"), needles=["safetensors"])
        ckpt_case("safetensors_truncated", lambda d: truncate(model_file(d), 300), needles=["safetensors"])
        ckpt_case("safetensors_empty", lambda d: truncate(model_file(d), 0), needles=["safetensors"])
        ckpt_case("model_file_missing", lambda d: os.remove(model_file(d)), needles=["model"])
        ckpt_case("iteration_dir_is_file", lambda d: (shutil.rmtree(f"{d}/iter_0000004"),
                                                      write(f"{d}/iter_0000004", "x")), needles=["iter_0000004"])
        ckpt_case("all_iterations_removed", lambda d: [shutil.rmtree(f"{d}/{n}") for n in os.listdir(d)
                                                       if n.startswith("iter_")], needles=["iter_0000004"])
        ckpt_case("other_model_size", lambda d: None, needles=["num_layers"],
                  extra=["--num-layers", "3"])
        ckpt_case("other_hidden_size", lambda d: None, needles=["hidden"], extra=["--hidden-size", "64"])
        ckpt_case("other_vocabulary", lambda d: None, needles=["vocab"], extra=["--vocab-size", "80"])
        ckpt_case("load_is_a_file", lambda d: (shutil.rmtree(d), write(d, "x")), needles=["--load"])
        ckpt_case("unreadable_tensor_file", lambda d: os.chmod(model_file(d), 0), expect="ok" if self.is_root
                  else "error", needles=["model"])

        # Saving while the disk fills, goes read-only, or the directory is swapped (tmpfs: needs root).
        mnt = f"{w}/mnt"
        def mount(size):
            def setup():
                subprocess.run(["umount", mnt], stderr=subprocess.DEVNULL)
                os.makedirs(mnt, exist_ok=True)
                subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], check=True)
            return setup
        for size in ("40k", "120k", "300k", "700k"):
            self.add(f"save on a {size} tmpfs (disk full)", "fault",
                     pg(*MOCK, "--train-iters", "6", "--save", f"{mnt}/ck", "--save-interval", "2"),
                     setup=mount(size), needles=["No space left"], root=True,
                     post=lambda: self.resumable(f"{mnt}/ck"))
        # A read-only bind mount over the save directory: a plain "remount,ro" is refused while the run holds
        # a file there open for writing (its lock), a bind mount of its own is not.
        ro = f"{w}/robind"
        self.add("save dir turned into a read-only bind mount mid-run", "fault",
                 ["bash", "-c", f"( sleep 1.5; mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} ) & exec " +
                  " ".join(shell_quote(pg(*MOCK, "--train-iters", "4000", "--save", ro, "--save-interval", "50")))],
                 setup=lambda: (subprocess.run(["umount", ro], stderr=subprocess.DEVNULL),
                                shutil.rmtree(ro, ignore_errors=True)),
                 needles=["Read-only"], root=True, post=lambda: self.unmount_then(ro, self.resumable))
        self.add("save dir deleted mid-run", "fault",
                 ["bash", "-c", f"( sleep 1.5; rm -rf {w}/gone ) & exec " + " ".join(
                     shell_quote(pg(*MOCK, "--train-iters", "3000", "--save", f"{w}/gone", "--save-interval", "50")))],
                 expect="ok", needles=[])
        self.add("save dir replaced by a file mid-run", "fault",
                 ["bash", "-c", f"( sleep 1.5; mv {w}/swap {w}/swap.old; echo x > {w}/swap ) & exec " + " ".join(
                     shell_quote(pg(*MOCK, "--train-iters", "3000", "--save", f"{w}/swap", "--save-interval", "50")))],
                 setup=lambda: [shutil.rmtree(f"{w}/{n}", ignore_errors=True) for n in ("swap", "swap.old")] and
                 [os.remove(f"{w}/swap") if os.path.isfile(f"{w}/swap") else None],
                 needles=["swap"], post=lambda: self.resumable(f"{w}/swap.old"))
        self.add("metrics file on a full disk", "fault",
                 pg(*MOCK, "--train-iters", "300", "--metrics-file", f"{mnt}/m.jsonl"),
                 setup=mount("8k"), needles=["m.jsonl", "No space left"], root=True)
        self.add("tensorboard dir on a full disk", "fault",
                 pg(*MOCK, "--train-iters", "300", "--tensorboard-dir", f"{mnt}/tb"),
                 setup=mount("8k"), needles=["tb", "No space left"], root=True)
        self.add("preprocess output on a full disk", "fault",
                 [self.tool("preprocess_data"), "--input", f"{w}/ids.jsonl", "--output-prefix", f"{mnt}/o",
                  "--tokenizer-type", "NullTokenizer", "--vocab-size", "97", "--log-interval", "0"],
                 setup=mount("8k"), needles=["No space left"], root=True,
                 post=lambda: self.no_partial(mnt))
        self.add("index cache on a full disk", "fault",
                 pg(*self.real, "--train-iters", "2", "--data-path", self.data, "--data-cache-path", f"{mnt}/c"),
                 setup=mount("4k"), expect="ok", root=True)
        self.add("convert_to_hf on a full disk", "fault",
                 [self.tool("convert_to_hf"), "--load", self.gpt2_ckpt, "--output", f"{mnt}/hf"],
                 setup=mount("20k"), needles=["No space left"], root=True, post=lambda: self.no_partial(mnt))

        # Resource limits and signals.
        self.add("file size limit during save (SIGXFSZ)", "fault",
                 ["bash", "-c", "ulimit -f 8; exec " + " ".join(shell_quote(
                     pg(*MOCK, "--train-iters", "4", "--save", f"{w}/fsz", "--save-interval", "2")))],
                 needles=["fsz"], setup=lambda: shutil.rmtree(f"{w}/fsz", ignore_errors=True))
        self.add("16 file descriptors", "fault",
                 ["bash", "-c", "ulimit -n 16; exec " + " ".join(shell_quote(
                     pg(*self.real, "--train-iters", "4", "--data-path", self.data, "--save", f"{w}/fd",
                        "--save-interval", "2")))], expect="ok",
                 setup=lambda: shutil.rmtree(f"{w}/fd", ignore_errors=True))
        self.add("256 MB address space", "fault",
                 ["bash", "-c", "ulimit -v 262144; exec " + " ".join(shell_quote(pg(*MOCK, "--train-iters", "2")))],
                 needles=["memory"])
        self.add("64 KB stack", "fault",
                 ["bash", "-c", "ulimit -s 64; exec " + " ".join(shell_quote(pg(*MOCK, "--train-iters", "2")))],
                 expect="ok")
        self.add("stdout closed", "fault",
                 ["bash", "-c", "exec " + " ".join(shell_quote(pg(*MOCK, "--train-iters", "3"))) + " >&-"],
                 expect="warn", needles=["stdout"])
        self.add("stdout is /dev/full", "fault",
                 ["bash", "-c", "exec " + " ".join(shell_quote(pg(*MOCK, "--train-iters", "3"))) + " > /dev/full"],
                 expect="warn", needles=["stdout: write failed"])
        self.add("stdout pipe closed early (head -1)", "fault",
                 ["bash", "-c", "set -o pipefail; " + " ".join(shell_quote(
                     pg(*MOCK, "--train-iters", "200", "--save", f"{w}/pipe", "--save-interval", "50"))) +
                  " | head -1"], expect="any", post=lambda: self.resumable(f"{w}/pipe"),
                 setup=lambda: shutil.rmtree(f"{w}/pipe", ignore_errors=True))
        for sig in ("SIGINT", "SIGHUP", "SIGTERM", "SIGQUIT"):
            d = f"{w}/sig-{sig}"
            self.add(f"{sig} mid-run, saving every 5", "fault",
                     pg(*MOCK, "--train-iters", "100000", "--save", d, "--save-interval", "5"),
                     signal_at=(2.0, getattr(signal, sig)), expect="any",
                     setup=lambda d=d: shutil.rmtree(d, ignore_errors=True), post=lambda d=d: self.resumable(d))
        d = f"{w}/stop"
        self.add("SIGSTOP for 3 s then SIGCONT", "fault",
                 ["bash", "-c", "(sleep 1; kill -STOP $$; sleep 3; kill -CONT $$) & exec " +
                  " ".join(shell_quote(pg(*MOCK, "--train-iters", "300")))], expect="ok", timeout=120)
        self.add("OMP_NUM_THREADS=0", "input", pg(*MOCK, "--train-iters", "2"), env={"OMP_NUM_THREADS": "0"},
                 expect="any")
        self.add("OMP_NUM_THREADS=abc", "input", pg(*MOCK, "--train-iters", "2"), env={"OMP_NUM_THREADS": "abc"},
                 expect="any")
        self.add("TMPDIR missing", "input", pg(*MOCK, "--train-iters", "2"), env={"TMPDIR": f"{w}/no/such"},
                 expect="ok")
        self.add("HOME unset", "input", ["env", "-u", "HOME", *pg(*MOCK, "--train-iters", "2")], expect="ok")
        self.add("GPTRAIN_FAULT_INJECT malformed", "input",
                 pg(*MOCK, "--train-iters", "2", "--save", f"{w}/fi", "--save-interval", "2"),
                 env={"GPTRAIN_FAULT_INJECT": "rename:x"}, needles=["GPTRAIN_FAULT_INJECT"])
        self.add("TZ far from UTC", "input", pg(*MOCK, "--train-iters", "20"),
                 env={"TZ": "UTC+12"}, expect="ok")

        # The other tools.
        pp = [self.tool("preprocess_data"), "--tokenizer-type", "NullTokenizer", "--vocab-size", "97",
              "--log-interval", "0"]
        def jsonl(name, data):
            return lambda: open(f"{w}/{name}", "wb").write(data)
        for name, data, needles in [
                ("nul.jsonl", b'{"text": "1 2\x003"}\n', ["nul.jsonl:1"]),
                ("ids_too_big.jsonl", b'{"text": "1 2 98"}\n', ["ids_too_big.jsonl:1"]),
                ("longline.jsonl", b'{"text": "' + b"5 " * 3_000_000 + b'5"}\n', None),
                ("crlf.jsonl", b'{"text": "1 2"}\r\n{"text": "3"}\r\n', None),
                ("no_newline.jsonl", b'{"text": "1 2"}', None),
                ("deep.jsonl", b'{"text": "1", "x": ' + b"[" * 100000 + b"]" * 100000 + b"}\n", ["nesting"]),
                ("huge_number.jsonl", b'{"text": "1", "n": 1' + b"0" * 100000 + b"}\n", None),
                ("latin1.jsonl", b'{"text": "caf\xe9"}\n', ["latin1.jsonl:1"]),
                ("empty.jsonl", b"", None)]:
            self.add(f"preprocess {name}", "input", [*pp, "--input", f"{w}/{name}", "--output-prefix", f"{w}/pp-{name}"],
                     setup=jsonl(name, data), expect="ok" if needles is None else "error", needles=needles or [],
                     post=(lambda n=name: self.no_partial(w, f"pp-{n}")) if needles else None)
        self.add("preprocess output prefix in a missing directory", "input",
                 [*pp, "--input", f"{w}/ids.jsonl", "--output-prefix", f"{w}/no/such/out"], needles=["no/such"])
        self.add("preprocess output prefix = its input's prefix", "input",
                 [*pp, "--input", f"{w}/same.jsonl", "--output-prefix", f"{w}/same"],
                 setup=lambda: shutil.copy(f"{w}/ids.jsonl", f"{w}/same.jsonl"), expect="ok",
                 post=lambda: self.unchanged_file(f"{w}/same.jsonl", f"{w}/ids.jsonl"))
        self.add("preprocess overwrites an existing dataset", "input",
                 [*pp, "--input", f"{w}/ids.jsonl", "--output-prefix", f"{w}/existing"],
                 setup=lambda: [shutil.copy(self.data + e, f"{w}/existing_text_document{e}") for e in (".bin", ".idx")],
                 expect="any")
        self.add("preprocess input is a directory", "input", [*pp, "--input", w, "--output-prefix", f"{w}/d"],
                 needles=[w])
        self.add("preprocess --workers 0", "input", [*pp, "--input", f"{w}/ids.jsonl", "--output-prefix",
                                                     f"{w}/w0", "--workers", "0"], needles=["--workers"])
        self.add("preprocess --vocab-size -1", "input", [self.tool("preprocess_data"), "--tokenizer-type",
                                                         "NullTokenizer", "--vocab-size", "-1", "--input",
                                                         f"{w}/ids.jsonl", "--output-prefix", f"{w}/v"],
                 needles=["--vocab-size"])
        self.add("preprocess NullTokenizer vocab 2^31-1", "input",
                 [self.tool("preprocess_data"), "--tokenizer-type", "NullTokenizer", "--vocab-size", "2147483647",
                  "--input", f"{w}/ids.jsonl", "--output-prefix", f"{w}/bigv", "--log-interval", "0"], expect="any")
        self.add("train with a 2^31-1 vocabulary", "input", pg(*TINY, "--mock-data", "--vocab-size", "2147483647",
                                                               "--train-iters", "1"), needles=["vocab"])
        self.add("train with a 2^24 vocabulary (dry run)", "input",
                 pg(*TINY, "--mock-data", "--vocab-size", "16777216", "--train-iters", "1", "--dry-run"), expect="ok")
        self.add("merge_datasets of different dtypes", "input",
                 [self.tool("merge_datasets"), "--input", f"{w}/mixdt", "--output-prefix", f"{w}/merged"],
                 setup=self.mixed_dtypes, needles=["dtype"])
        self.add("merge_datasets output over an input", "input",
                 [self.tool("merge_datasets"), "--input", f"{w}/mergeself", "--output-prefix",
                  f"{w}/mergeself/a_text_document"], setup=self.merge_self, expect="any",
                 post=lambda: self.unchanged_file(f"{w}/mergeself/a_text_document.bin", self.data + ".bin"))
        self.add("convert_to_hf from a missing dir", "input",
                 [self.tool("convert_to_hf"), "--load", f"{w}/none", "--output", f"{w}/hf1"], needles=["none"])
        self.add("convert_to_hf over a user's non-empty dir", "input",
                 [self.tool("convert_to_hf"), "--load", self.gpt2_ckpt, "--output", f"{w}/userdir"],
                 setup=lambda: (os.makedirs(f"{w}/userdir", exist_ok=True),
                                open(f"{w}/userdir/thesis.tex", "w").write("precious")),
                 expect="any", post=lambda: self.exists(f"{w}/userdir/thesis.tex"))
        self.add("convert_to_hf output = its checkpoint", "input",
                 [self.tool("convert_to_hf"), "--load", f"{w}/ck-self", "--output", f"{w}/ck-self"],
                 setup=lambda: (shutil.rmtree(f"{w}/ck-self", ignore_errors=True),
                                shutil.copytree(self.gpt2_ckpt, f"{w}/ck-self")), expect="any",
                 post=lambda: self.resumable(f"{w}/ck-self", GPT2))
        self.add("convert_from_hf of an empty dir", "input",
                 [self.tool("convert_from_hf"), "--load", f"{w}/emptyhf", "--save", f"{w}/fromhf"],
                 setup=lambda: os.makedirs(f"{w}/emptyhf", exist_ok=True), needles=["config.json"])
        self.add("convert_from_hf config.json is a list", "input",
                 [self.tool("convert_from_hf"), "--load", f"{w}/listhf", "--save", f"{w}/fromhf2"],
                 setup=lambda: (os.makedirs(f"{w}/listhf", exist_ok=True),
                                open(f"{w}/listhf/config.json", "w").write("[1,2]")), needles=["config.json"])
        self.add("convert_from_hf over an existing checkpoint", "input",
                 [self.tool("convert_from_hf"), "--load", f"{w}/hfsrc", "--save", f"{w}/ck-target"],
                 setup=self.hf_source, expect="any", post=lambda: self.resumable(f"{w}/ck-target"))
        self.add("generate from a missing checkpoint", "input",
                 [self.tool("generate"), "--load", f"{w}/none", "--prompt", "1 2"], needles=["none"])
        self.add("generate --max-new-tokens 0", "input",
                 [self.tool("generate"), "--load", self.ckpt, "--max-new-tokens", "0", "--tokenizer-type",
                  "NullTokenizer", "--vocab-size", "96"], needles=["--max-new-tokens"])
        self.add("generate prompt of ids past the vocabulary", "input",
                 [self.tool("generate"), "--load", self.ckpt, "--prompt", "500 1", "--tokenizer-type", "NullTokenizer",
                  "--vocab-size", "96"], needles=["500"])
        self.add("generate --temperature nan", "input",
                 [self.tool("generate"), "--load", self.ckpt, "--temperature", "nan", "--tokenizer-type",
                  "NullTokenizer", "--vocab-size", "96"], needles=["--temperature"])
        self.add("inspect_data of a damaged idx", "input", [self.tool("inspect_data"), "summary", "--data-path", f"{w}/insp"],
                 setup=lambda: (self.fresh_data("insp"), truncate(f"{w}/insp.idx", 30)), needles=["insp"])

    # ---- post-checks: was anything lost? ---------------------------------------------------------
    def resumable(self, d, flags=MOCK):
        if not os.path.isdir(d):
            return None  # nothing saved: nothing lost
        if not os.path.exists(os.path.join(d, "latest_checkpointed_iteration.txt")) and not any(
                n.startswith("iter_") for n in os.listdir(d)):
            return None
        r = run(self.pg(*flags, "--train-iters", "1000000", "--exit-interval", "1", "--load", d,
                        "--override-opt-param-scheduler"), timeout=60)
        if r.returncode != 0:
            return f"the checkpoint in {d} does not resume: {tail(r)}"
        return None

    def unmount_then(self, d, check):
        subprocess.run(["umount", d], stderr=subprocess.DEVNULL)
        return check(d)

    def no_partial(self, d, prefix=""):
        left = [n for n in os.listdir(d) if n.startswith(prefix) and (".tmp" in n or n.endswith((".bin", ".idx")))]
        return f"left behind: {left}" if left else None

    def unchanged_file(self, a, b):
        return None if open(a, "rb").read() == open(b, "rb").read() else f"{a} changed"

    def exists(self, p):
        return None if os.path.exists(p) else f"{p} was removed"

    def dataset_dir(self, name, copies):  # a fresh directory holding the fixture dataset under each name
        d = f"{self.work}/{name}"
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for e in (".bin", ".idx"):
            for c in copies:
                shutil.copy(self.data + e, f"{d}/{c}_text_document{e}")
        return d

    def mixed_dtypes(self):
        d = self.dataset_dir("mixdt", ["a"])
        run([self.tool("preprocess_data"), "--input", f"{self.work}/ids.jsonl", "--output-prefix", f"{d}/b",
             "--tokenizer-type", "NullTokenizer", "--vocab-size", "100000", "--log-interval", "0"], check=True)

    def merge_self(self):
        self.dataset_dir("mergeself", ["a", "b"])

    def hf_source(self):
        shutil.rmtree(f"{self.work}/hfsrc", ignore_errors=True)
        run([self.tool("convert_to_hf"), "--load", self.gpt2_ckpt, "--output", f"{self.work}/hfsrc"], check=True)
        self.fresh_ckpt("ck-target")

    # ---- running and judging ---------------------------------------------------------------------
    def judge(self, c):
        if c.root and not self.is_root:
            return "skipped", "needs root"
        if c.setup:
            c.setup()
        env = dict(os.environ, **(c.env or {}))
        t0 = time.time()
        p = subprocess.Popen(c.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=self.work,
                             start_new_session=True)
        if c.signal_at:
            time.sleep(c.signal_at[0])
            if p.poll() is None:
                p.send_signal(c.signal_at[1])
        try:
            out, err = p.communicate(timeout=c.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return "hang", f"still running after {c.timeout} s"
        finally:
            subprocess.run(["umount", f"{self.work}/mnt"], stderr=subprocess.DEVNULL)
        rc, text = p.returncode, (out + err).decode(errors="replace")
        last = [l for l in text.strip().splitlines() if l.strip()][-1:] or [""]
        lost = c.post() if c.post else None
        crashed = (rc < 0 and c.signal_at is None) or rc in (134, 136, 139) or any(
            s in text for s in ("terminate called", "std::bad_alloc", "AddressSanitizer", "runtime error:",
                                "Segmentation fault", "core dumped"))
        if crashed:
            return "crash", f"rc {rc}: {last[0][:200]}"
        if lost:
            return "lost", lost
        if c.expect == "ok":
            return ("ok", "ran") if rc == 0 else ("failed", f"rc {rc}: {last[0][:200]}")
        if c.expect == "warn":  # runs on, saying what went wrong
            missing = [n for n in c.needles if n.lower() not in text.lower()]
            if rc != 0:
                return "failed", f"rc {rc}: {last[0][:200]}"
            return ("silent", f"exit 0 without {missing}") if missing else ("ok", "warned and ran")
        if c.expect == "any":
            return "ok", f"rc {rc}: {last[0][:160]}"
        if rc == 0:
            return "silent", f"exit 0 ({last[0][:160]})"
        missing = [n for n in c.needles if n.lower() not in text.lower()]
        if missing:
            return "unclear", f"rc {rc}, no {missing}: {last[0][:200]}"
        return "ok", f"rc {rc}: {last[0][:160]}"


def shell_quote(cmd):
    import shlex
    return [shlex.quote(a) for a in cmd]


def tail(r):
    t = (r.stdout + r.stderr).decode(errors="replace").strip().splitlines()
    return t[-1] if t else ""


def run(cmd, check=False, timeout=120):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if check and r.returncode != 0:
        sys.exit(f"probe: setup command failed: {' '.join(cmd)}\n{tail(r)}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bin_dir")
    ap.add_argument("work_dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    probe = Probe(a.bin_dir, a.work_dir)
    probe.fixtures()
    probe.build()
    if a.list:
        for c in probe.cases:
            print(c.kind, c.name)
        return
    counts = {}
    for c in probe.cases:
        if a.only and a.only not in c.name:
            continue
        outcome, why = probe.judge(c)
        counts[(c.kind, outcome)] = counts.get((c.kind, outcome), 0) + 1
        print(f"{outcome:8s} {c.kind:6s} {c.name}: {why}", flush=True)
    outcomes = ["ok", "crash", "hang", "silent", "unclear", "lost", "failed", "skipped"]
    print("\n| kind | cases | " + " | ".join(outcomes) + " |")
    print("|---|---|" + "---|" * len(outcomes))
    for kind in ("fault", "input"):
        row = [counts.get((kind, o), 0) for o in outcomes]
        print(f"| {kind} | {sum(row)} | " + " | ".join(map(str, row)) + " |")
    bad = sum(v for (k, o), v in counts.items() if o not in ("ok", "skipped"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
