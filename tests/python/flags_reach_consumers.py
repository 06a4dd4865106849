"""Every pretrain_gpt flag reaches the code that consumes it.

The flag table is read from the binary itself (`pretrain_gpt --list-flags`). For every flag the table binds
to a field, the PROBES table below gives a run without the flag (base) and one with it (probe), both tiny
CPU runs through the real training path (or --dry-run, or mpirun -np 2 where the flag only matters with
several ranks). What the two runs show -- the log with timestamps and timings masked, the full-precision
metrics records, the files written and the checkpoint metadata (without its "args" echo of the flags) --
must differ: a flag that no code reads leaves everything the same and fails the test, as does a bound flag
without a probe. Flags whose consumer runs only on a GPU (fp16 loss scaling) name the unit test that drives
that consumer from parsed flags instead. Accepted-without-effect flags must print their info line and have
their row in docs/flags-without-effect.md, accepted choices must refuse other values, and rejected flags
must be refused by name.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--tmp", required=True)
ap.add_argument("--only", default="", help="comma-separated flag names (debugging)")
a = ap.parse_args()
PRETRAIN = os.path.join(a.bin, "pretrain_gpt")
os.makedirs(a.tmp, exist_ok=True)

COMMON = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", "16",
          "--max-position-embeddings", "32", "--micro-batch-size", "2", "--global-batch-size", "4",
          "--train-iters", "4", "--lr", "1e-2", "--log-interval", "1", "--eval-interval", "2", "--eval-iters", "1",
          "--seed", "7", "--device", "cpu"]
MOCK = ["--mock-data", "--vocab-size", "250"]

# ---- data and checkpoints the probes share (made once) ----
DATA = os.path.join(a.tmp, "data")


def make_data():
    os.makedirs(DATA, exist_ok=True)
    words = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches".split()
    for name, seed in (("a", 1), ("b", 2)):
        with open(os.path.join(DATA, f"{name}.jsonl"), "w") as f:
            x = seed
            for doc in range(60):
                n = 20 + (x % 50)
                text = []
                for _ in range(n):
                    x = (x * 1103515245 + 12345) % (1 << 31)
                    text.append(words[x % len(words)])
                f.write(json.dumps({"text": " ".join(text)}) + "\n")
        subprocess.run([os.path.join(a.bin, "preprocess_data"), "--input", os.path.join(DATA, f"{name}.jsonl"),
                        "--output-prefix", os.path.join(DATA, name), "--tokenizer-type", "GPT2BPETokenizer",
                        "--append-eod"], check=True, capture_output=True)
    return os.path.join(DATA, "a_text_document"), os.path.join(DATA, "b_text_document")


PA, PB = make_data()
REAL = ["--data-path", PA, "--split", "90,5,5"]
# The data-argument files name the other dataset than REAL / --train-data-path PA.
LIST_B = os.path.join(DATA, "list_b.txt")
with open(LIST_B, "w") as f:
    f.write(PB + "\n")
SPLIT_B = os.path.join(DATA, "split_b.json")
with open(SPLIT_B, "w") as f:
    json.dump({"train": [PB], "valid": None, "test": None}, f)


def sub(args, run):
    return [x.replace("{RUN}", run) for x in args]


def prepare_checkpoints():
    """{CKA}: iterations 2 and 4 of a run with dropout, lr 1e-2."""
    ck = os.path.join(a.tmp, "ck_a")
    shutil.rmtree(ck, ignore_errors=True)
    subprocess.run([PRETRAIN] + COMMON + MOCK + ["--save", ck, "--save-interval", "2"], check=True,
                   capture_output=True)
    return ck


CKA = prepare_checkpoints()


def prepare_damaged():
    """{CK} for --ckpt-fallback-to-intact: CKA with one bit of iteration 4's model file flipped."""
    ck = os.path.join(a.tmp, "ck_damaged")
    shutil.rmtree(ck, ignore_errors=True)
    shutil.copytree(CKA, ck)
    path = os.path.join(ck, "iter_0000004", "model_tp00_pp000.safetensors")
    with open(path, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        b = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x40]))
    return ck


def prepare_non_persistent():
    """{CK} for --non-persistent-ckpt-type: persistent iteration 2, non-persistent iteration 3 (newer)."""
    ck = os.path.join(a.tmp, "ck_np")
    shutil.rmtree(ck, ignore_errors=True)
    subprocess.run([PRETRAIN] + COMMON + MOCK + ["--save", ck, "--save-interval", "2", "--non-persistent-save-interval",
                                                 "3", "--non-persistent-ckpt-type", "global"], check=True,
                   capture_output=True)
    shutil.rmtree(os.path.join(ck, "iter_0000004"))  # as if the run had died after iteration 3
    with open(os.path.join(ck, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("2")
    return ck


def prepare_dense_no_bias():
    """{CK} for --moe-use-upcycling: a dense model without linear biases (the experts have none), iteration 4."""
    ck = os.path.join(a.tmp, "ck_dense")
    shutil.rmtree(ck, ignore_errors=True)
    subprocess.run([PRETRAIN] + COMMON + MOCK + ["--disable-bias-linear", "--save", ck, "--save-interval", "4"],
                   check=True, capture_output=True)
    return ck


CKD = prepare_damaged()
CKN = prepare_non_persistent()
CKU = prepare_dense_no_bias()


def with_ck(run, src=True):
    """A private copy of a prepared checkpoint (CKA unless src names another; a probe may write into it)."""
    dst = os.path.join(run, "ck")
    shutil.copytree(CKA if src is True else src, dst)
    return dst


# ---- the probes: flag -> base run (data + base) and probe run (pdata or data, + base + probe) ----
def p(probe, base=(), data=None, np=1, ck=False, pdata=None, env=None):
    """env: extra environment of both runs (test hooks such as GPTRAIN_TEST_RAISE_SIGNAL)."""
    data = MOCK if data is None else data
    return {"base": list(base), "probe": list(probe), "data": data, "pdata": data if pdata is None else pdata,
            "np": np, "ck": ck, "env": dict(env or {})}


ROPE = ["--position-embedding-type", "rope"]
FP8 = ["--fp8-format", "hybrid"]
FP8_CK = FP8 + ["--save", "{RUN}/out", "--save-interval", "2"]
FP8_TW = FP8 + ["--fp8-recipe", "tensorwise"]
YARN = ["--position-embedding-type", "yarn"]
YARN4 = YARN + ["--rotary-scaling-factor", "4"]  # factor 1 is plain RoPE
SAMPLES = ["--train-samples", "16"]  # replaces --train-iters (given as the base's extra, with --train-iters dropped)
WSD = ["--lr-decay-style", "WSD", "--lr-wsd-decay-iters", "2"]
SPIKE = ["--train-iters", "1000", "--lr", "10", "--lr-warmup-iters", "10000", "--lr-decay-iters", "20000",
         "--lr-decay-style", "constant", "--clip-grad", "0", "--eval-interval", "1000"]
RESUME = ["--load", "{CK}", "--ckpt-step", "2"]
MUON = ["--optimizer", "muon"]
MOE = ["--disable-bias-linear", "--num-experts", "4"]
MOE_AUX = MOE + ["--moe-aux-loss-coeff", "0.1"]  # the prepared run's iteration 2 of 4: two iterations to go
PROBES = {
    # model
    "num-layers": p(["--num-layers", "3"]),
    "hidden-size": p(["--hidden-size", "48"]),
    "ffn-hidden-size": p(["--ffn-hidden-size", "40"]),
    "num-attention-heads": p(["--num-attention-heads", "2"]),
    "kv-channels": p(["--kv-channels", "16"]),
    "group-query-attention": p(["--group-query-attention", "--num-query-groups", "2"]),
    "num-query-groups": p(["--num-query-groups", "2"], base=["--group-query-attention", "--num-query-groups", "4"]),
    "seq-length": p(["--seq-length", "8"]),
    "max-position-embeddings": p(["--max-position-embeddings", "64"]),
    "position-embedding-type": p(ROPE),
    "use-rotary-position-embeddings": p(["--use-rotary-position-embeddings"]),
    "rotary-base": p(["--rotary-base", "500"], base=ROPE),
    "rotary-percent": p(["--rotary-percent", "0.5"], base=ROPE),
    "rotary-interleaved": p(["--rotary-interleaved"], base=ROPE),
    # head dim 8, base 1e4: wavelengths 6.3, 63, 628, 6283; Meta's defaults blend the longest, the others
    # move the band limits or the blend
    "use-rope-scaling": p(["--use-rope-scaling"], base=ROPE),
    "rope-scaling-factor": p(["--rope-scaling-factor", "2"], base=ROPE + ["--use-rope-scaling"]),
    "rope-scaling-low-freq-factor": p(["--rope-scaling-low-freq-factor", "0.5"], base=ROPE + ["--use-rope-scaling"]),
    "rope-scaling-high-freq-factor": p(["--rope-scaling-high-freq-factor", "8"], base=ROPE + ["--use-rope-scaling"]),
    "rope-scaling-original-max-position-embeddings": p(["--rope-scaling-original-max-position-embeddings", "64"],
                                                       base=ROPE + ["--use-rope-scaling"]),
    "rotary-seq-len-interpolation-factor": p(["--rotary-seq-len-interpolation-factor", "4"], base=ROPE),
    "rotary-scaling-factor": p(["--rotary-scaling-factor", "4"], base=YARN),
    "yarn-original-max-position-embeddings": p(["--yarn-original-max-position-embeddings", "64"], base=YARN4),
    "yarn-beta-fast": p(["--yarn-beta-fast", "4"], base=YARN4),
    "yarn-beta-slow": p(["--yarn-beta-slow", "0.5"], base=YARN4),
    "no-yarn-correction-range-round-to-int": p(["--no-yarn-correction-range-round-to-int"], base=YARN4),
    # Megatron's default restated: it reaches the parser, which says it has no effect without yarn.
    "yarn-correction-range-round-to-int": p(["--yarn-correction-range-round-to-int"]),
    "mscale": p(["--mscale", "2"], base=YARN4),
    "mscale-all-dim": p(["--mscale-all-dim", "0.5"], base=YARN4),
    "normalization": p(["--normalization", "RMSNorm"]),
    "norm-epsilon": p(["--norm-epsilon", "1e-2"]),
    # the stored norm weights (gamma - 1) and the model metadata differ
    "apply-layernorm-1p": p(["--apply-layernorm-1p"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "swiglu": p(["--swiglu"]),
    "geglu": p(["--geglu"]),
    "squared-relu": p(["--squared-relu"]),
    "scale-embeddings-by-sqrt-hidden": p(["--scale-embeddings-by-sqrt-hidden"]),
    "qk-layernorm": p(["--qk-layernorm"], base=["--normalization", "RMSNorm"]),
    "qk-l2-norm": p(["--qk-l2-norm"]),
    # seq 16: a window of 4 keys hides most of each query's past; skip-freq 2 restores it in layer 2
    "window-size": p(["--window-size", "3,0"]),
    "window-attn-skip-freq": p(["--window-attn-skip-freq", "2"], base=["--window-size", "3,0"]),
    "disable-bias-linear": p(["--disable-bias-linear"]),
    "add-qkv-bias": p(["--add-qkv-bias"], base=["--disable-bias-linear"]),
    "untie-embeddings-and-output-weights": p(["--untie-embeddings-and-output-weights"]),
    "make-vocab-size-divisible-by": p(["--make-vocab-size-divisible-by", "200"]),
    "no-bias-gelu-fusion": p(["--no-bias-gelu-fusion"]),
    "parallel-residual": p(["--parallel-residual", "two_norms"]),
    "gelu": p(["--gelu", "erf"]),
    "output-layer-bias": p(["--output-layer-bias"], base=["--untie-embeddings-and-output-weights"]),
    "disable-bias-attention": p(["--disable-bias-attention"]),
    "hidden-dropout": p(["--hidden-dropout", "0.3"]),
    "attention-dropout": p(["--attention-dropout", "0.3"]),
    "init-method-std": p(["--init-method-std", "0.05"]),
    "init-method-xavier-uniform": p(["--init-method-xavier-uniform"]),
    "embedding-init-method-std": p(["--embedding-init-method-std", "0.5"]),
    # FP8 training: the quantised GEMMs change the losses; the delayed-scaling flags change the saved state
    "fp8-format": p(["--fp8-format", "e4m3"]),
    "fp8-recipe": p(["--fp8-recipe", "tensorwise"], base=FP8),
    "fp8-margin": p(["--fp8-margin", "2"], base=FP8_CK),
    "fp8-amax-history-len": p(["--fp8-amax-history-len", "3"], base=FP8_CK),
    "fp8-amax-compute-algo": p(["--fp8-amax-compute-algo", "max"], base=FP8_CK + ["--fp8-amax-history-len", "3"]),
    "no-fp8-wgrad": p(["--no-fp8-wgrad"], base=FP8),
    "first-last-layers-bf16": p(["--first-last-layers-bf16"], base=FP8_TW),
    "num-layers-at-start-in-bf16": p(["--num-layers-at-start-in-bf16", "0"],
                                     base=FP8_TW + ["--first-last-layers-bf16"]),
    "num-layers-at-end-in-bf16": p(["--num-layers-at-end-in-bf16", "0"], base=FP8_TW + ["--first-last-layers-bf16"]),
    # mixture of experts (MOE: 4 experts on a bias-free model; each probe changes what the run computes or logs)
    "num-experts": p(["--num-experts", "4"], base=["--disable-bias-linear"]),
    "moe-layer-freq": p(["--moe-layer-freq", "2"], base=MOE),
    "moe-router-topk": p(["--moe-router-topk", "1"], base=MOE),
    "moe-router-load-balancing-type": p(["--moe-router-load-balancing-type", "seq_aux_loss"], base=MOE_AUX),
    "moe-aux-loss-coeff": p(["--moe-aux-loss-coeff", "0.1"], base=MOE),
    "moe-z-loss-coeff": p(["--moe-z-loss-coeff", "0.1"], base=MOE),
    "moe-router-score-function": p(["--moe-router-score-function", "sigmoid"], base=MOE),
    "moe-router-pre-softmax": p(["--moe-router-pre-softmax"], base=MOE),
    "moe-router-topk-scaling-factor": p(["--moe-router-topk-scaling-factor", "3"], base=MOE),
    "moe-ffn-hidden-size": p(["--moe-ffn-hidden-size", "24"], base=MOE),
    "moe-shared-expert-intermediate-size": p(["--moe-shared-expert-intermediate-size", "16"], base=MOE),
    "moe-shared-expert-gate": p(["--moe-shared-expert-gate"], base=MOE + ["--moe-shared-expert-intermediate-size", "16"]),
    "moe-expert-capacity-factor": p(["--moe-expert-capacity-factor", "0.5"], base=MOE),
    "moe-token-drop-policy": p(["--moe-token-drop-policy", "position"], base=MOE + ["--moe-expert-capacity-factor", "0.5"]),
    # padding changes no value (zero rows), only the rows the experts compute: the memory plan's activations
    "moe-pad-expert-input-to-capacity": p(["--moe-pad-expert-input-to-capacity"],
                                          base=MOE + ["--moe-expert-capacity-factor", "1.5", "--dry-run"]),
    "moe-per-layer-logging": p(["--moe-per-layer-logging"], base=MOE_AUX),
    # the bias moves after each step and changes later choices
    "moe-router-enable-expert-bias": p(["--moe-router-enable-expert-bias"],
                                       base=MOE + ["--moe-router-score-function", "sigmoid",
                                                   "--moe-router-bias-update-rate", "0.5"]),
    "moe-router-bias-update-rate": p(["--moe-router-bias-update-rate", "0.5"],
                                     base=MOE + ["--moe-router-score-function", "sigmoid",
                                                 "--moe-router-enable-expert-bias"]),
    # one group of all 4 experts (no limit) against 2 groups of 2, one chosen
    "moe-router-num-groups": p(["--moe-router-num-groups", "2"],
                               base=MOE + ["--moe-router-group-topk", "1", "--moe-router-num-groups", "1"]),
    "moe-router-group-topk": p(["--moe-router-group-topk", "1"], base=MOE + ["--moe-router-num-groups", "2"]),
    "moe-input-jitter-eps": p(["--moe-input-jitter-eps", "0.3"], base=MOE),
    # the MoE model starts from the dense checkpoint's weights instead of its initialisation
    "moe-use-upcycling": p(["--load", "{CK}", "--moe-use-upcycling"], base=MOE + ["--save", "{RUN}/up", "--save-interval", "4"],
                           ck=CKU),
    # tokenizer
    "tokenizer-type": p(["--tokenizer-type", "NullTokenizer", "--vocab-size", "300"], base=["--vocab-size", "300"]),
    "vocab-file": p(["--vocab-file", "{RUN}/missing-vocab.json", "--merge-file", "{RUN}/missing-merges.txt"], data=REAL),
    "merge-file": p(["--vocab-file", "{RUN}/missing-vocab.json", "--merge-file", "{RUN}/missing-merges.txt"], data=REAL),
    "tokenizer-model": p(["--tokenizer-model", "{RUN}/missing-tokenizer.json"], base=["--tokenizer-type", "HuggingFaceTokenizer"],
                         data=REAL),
    "vocab-size": p(["--vocab-size", "300"]),
    "tiktoken-pattern": p(["--tiktoken-pattern", "v2"]),
    "tiktoken-num-special-tokens": p(["--tiktoken-num-special-tokens", "5"],
                                     base=["--tokenizer-type", "TikTokenizer", "--tokenizer-model", "{RUN}/missing.json"]),
    "tiktoken-special-tokens": p(["--tiktoken-special-tokens", "<unk>"],
                                 base=["--tokenizer-type", "TikTokenizer", "--tokenizer-model", "{RUN}/missing.json"]),
    # data
    "data-path": p(["--data-path", PA], pdata=[]),
    "split": p(["--split", "50,25,25"], data=REAL),
    "train-data-path": p(["--train-data-path", PA, "--valid-data-path", PB], pdata=[]),
    "valid-data-path": p(["--valid-data-path", PB], base=["--train-data-path", PA], data=[]),
    "test-data-path": p(["--test-data-path", PB], base=["--train-data-path", PA], data=[]),
    "data-args-path": p(["--data-args-path", LIST_B, "--split", "90,5,5"], data=REAL, pdata=[]),
    "per-split-data-args-path": p(["--per-split-data-args-path", SPLIT_B], data=["--train-data-path", PA], pdata=[]),
    "multiple-validation-sets": p(["--multiple-validation-sets", "--full-validation"], base=["--full-validation"]),
    "validation-set-names": p(["--validation-set-names", "x"], base=["--multiple-validation-sets", "--full-validation"]),
    "data-cache-path": p(["--data-cache-path", "{RUN}/cache"], data=REAL),
    "mock-data": p(["--mock-data", "--vocab-size", "50257"], data=REAL, pdata=[]),
    "mid-level-dataset-surplus": p(["--mid-level-dataset-surplus", "0.5"], data=["--data-path", "0.5", PA, "0.5", PB]),
    "reset-position-ids": p(["--reset-position-ids"], data=REAL),
    "reset-attention-mask": p(["--reset-attention-mask"], data=REAL),
    "eod-mask-loss": p(["--eod-mask-loss"], data=REAL),
    # training
    "micro-batch-size": p(["--micro-batch-size", "1"]),
    "global-batch-size": p(["--global-batch-size", "8"]),
    "train-iters": p(["--train-iters", "3"]),
    "train-samples": p(["--train-samples", "12"]),
    # gbs 4 from 2 by 2 over 4 samples: batches 2, 2, 4, ... instead of 4, 4, ...
    "rampup-batch-size": p(["--rampup-batch-size", "2", "2", "4"], base=SAMPLES),
    # 64 tokens = 4 samples of 16: batches 2, 2, 4, ... (the schedule replaces --global-batch-size 4)
    "step-batch-size-schedule": p(["--step-batch-size-schedule", "0:2 64:4"], base=SAMPLES),
    # 5 does not divide by mbs 2: refused without the flag, run as 4 with it
    "decrease-batch-size-if-needed": p(["--decrease-batch-size-if-needed"], base=SAMPLES + ["--global-batch-size", "5"]),
    "eval-interval": p(["--eval-interval", "1"]),
    "eval-iters": p(["--eval-iters", "2"]),
    # evaluations at 2 and 4 without it, only at 4 with it
    "start-eval-at-iter": p(["--start-eval-at-iter", "3"]),
    "eval-global-batch-size": p(["--eval-global-batch-size", "8"]),
    # the loss does not depend on the evaluation micro-batch: the probe is its divisibility check
    "eval-micro-batch-size": p(["--eval-micro-batch-size", "3"], base=["--eval-global-batch-size", "8"]),
    "skip-train": p(["--skip-train"]),
    "full-validation": p(["--full-validation"]),
    "iterations-to-skip": p(["--iterations-to-skip", "2"]),
    "exit-interval": p(["--exit-interval", "2"]),
    "exit-duration-in-mins": p(["--exit-duration-in-mins", "1e-9"]),
    # SIGTERM (SIGUSR1) raised in iteration 2: without the handler (for it) the run dies of it, with it the run
    # saves iteration 2 and exits 0.
    "exit-signal-handler": p(["--exit-signal-handler"], base=["--save", "{RUN}/out", "--save-interval", "100"],
                             env={"GPTRAIN_TEST_RAISE_SIGNAL": "SIGTERM@2"}),
    "exit-signal": p(["--exit-signal", "SIGUSR1"],
                     base=["--exit-signal-handler", "--save", "{RUN}/out", "--save-interval", "100"],
                     env={"GPTRAIN_TEST_RAISE_SIGNAL": "SIGUSR1@2"}),
    "seed": p(["--seed", "8"]),
    # recomputation: the memory plan line names it and its arena (the losses are the same, bit for bit)
    "recompute-activations": p(["--recompute-activations"]),
    "recompute-granularity": p(["--recompute-granularity", "selective"]),
    "recompute-method": p(["--recompute-method", "block"], base=["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]),
    "recompute-num-layers": p(["--recompute-num-layers", "2"], base=["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]),
    "recompute-modules": p(["--recompute-modules", "mlp"], base=["--recompute-granularity", "selective"]),
    # --cpu-offloading alone is refused (it needs the number of layers); N > 0 changes the memory plan line
    "cpu-offloading": p(["--cpu-offloading"]),
    "cpu-offloading-num-layers": p(["--cpu-offloading-num-layers", "1"]),
    "optimizer-cpu-offload": p(["--optimizer-cpu-offload"]),
    "optimizer-offload-fraction": p(["--optimizer-offload-fraction", "0.5"], base=["--optimizer-cpu-offload"]),
    "use-precision-aware-optimizer": p(["--use-precision-aware-optimizer"], base=["--use-distributed-optimizer"]),
    "exp-avg-dtype": p(["--exp-avg-dtype", "bf16"], base=["--use-distributed-optimizer", "--use-precision-aware-optimizer"]),
    "exp-avg-sq-dtype": p(["--exp-avg-sq-dtype", "bf16"],
                          base=["--use-distributed-optimizer", "--use-precision-aware-optimizer"]),
    "bf16-stochastic-rounding": p(["--bf16-stochastic-rounding"]),
    "distribute-saved-activations": p(["--distribute-saved-activations"],
                                      base=["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"] + ["--tensor-model-parallel-size", "2"], np=2),
    "checkpoint-activations": p(["--checkpoint-activations"]),
    "activations-checkpoint-method": p(["--activations-checkpoint-method", "block"]),
    "activations-checkpoint-num-layers": p(["--activations-checkpoint-num-layers", "2"],
                                           base=["--activations-checkpoint-method", "uniform"]),
    # Real documents end in EOD: with --eod-mask-loss the micro-batches hold different loss-token counts.
    "calculate-per-token-loss": p(["--calculate-per-token-loss"], base=["--eod-mask-loss"], data=REAL),
    # --lr 1e10 makes iteration 2's loss NaN: the base stops there, the probe trains on to iteration 4.
    "no-check-for-nan-in-loss-and-grad": p(["--no-check-for-nan-in-loss-and-grad"], base=["--lr", "1e10"]),
    # An LR warming up to 10: calm for the first 100 iterations, then loss and grad norm grow over 10x.
    "check-for-spiky-loss": p(["--check-for-spiky-loss"], base=SPIKE),
    "check-for-large-grads": p(["--check-for-large-grads"], base=SPIKE),
    # schedule
    "lr": p(["--lr", "5e-3"]),
    "min-lr": p(["--min-lr", "5e-3"]),
    "lr-decay-style": p(["--lr-decay-style", "cosine"]),
    "lr-decay-iters": p(["--lr-decay-iters", "8"]),
    "lr-decay-samples": p(["--lr-decay-samples", "32"], base=SAMPLES),
    "lr-warmup-iters": p(["--lr-warmup-iters", "2"]),
    "lr-warmup-samples": p(["--lr-warmup-samples", "8"], base=SAMPLES),
    "lr-warmup-fraction": p(["--lr-warmup-fraction", "0.5"]),
    "lr-warmup-init": p(["--lr-warmup-init", "1e-3"], base=["--lr-warmup-iters", "2"]),
    "decoupled-lr": p(["--decoupled-lr", "3e-2"]),
    "decoupled-min-lr": p(["--decoupled-min-lr", "5e-3"], base=["--decoupled-lr", "3e-2"]),
    "lr-wsd-decay-style": p(["--lr-wsd-decay-style", "linear"], base=WSD),
    "lr-wsd-decay-iters": p(["--lr-wsd-decay-iters", "3"], base=WSD),
    "lr-wsd-decay-samples": p(["--lr-wsd-decay-samples", "12"], base=SAMPLES + ["--lr-decay-style", "WSD",
                                                                                "--lr-wsd-decay-samples", "8"]),
    "weight-decay": p(["--weight-decay", "0.5"]),
    "start-weight-decay": p(["--start-weight-decay", "0.2"],
                            base=["--weight-decay-incr-style", "linear", "--start-weight-decay", "0.0",
                                  "--end-weight-decay", "0.1"]),
    "end-weight-decay": p(["--end-weight-decay", "0.5"],
                          base=["--weight-decay-incr-style", "linear", "--start-weight-decay", "0.0",
                                "--end-weight-decay", "0.1"]),
    "weight-decay-incr-style": p(["--weight-decay-incr-style", "cosine"],
                                 base=["--start-weight-decay", "0.0", "--end-weight-decay", "0.1",
                                       "--weight-decay-incr-style", "linear"]),
    # A resumed run with a changed --lr: refused without a rule, resolved by either flag.
    "override-opt-param-scheduler": p(["--override-opt-param-scheduler"], base=RESUME + ["--lr", "5e-3"], ck=True),
    "use-checkpoint-opt-param-scheduler": p(["--use-checkpoint-opt-param-scheduler"], base=RESUME + ["--lr", "5e-3"],
                                            ck=True),
    # optimizer and precision
    "adam-beta1": p(["--adam-beta1", "0.5"]),
    "adam-beta2": p(["--adam-beta2", "0.9"]),
    "adam-eps": p(["--adam-eps", "1e-2"]),
    "clip-grad": p(["--clip-grad", "0.01"]),
    "optimizer": p(["--optimizer", "sgd"]),
    "sgd-momentum": p(["--sgd-momentum", "0.5"], base=["--optimizer", "sgd"]),
    "muon-momentum": p(["--muon-momentum", "0.5"], base=MUON),
    "muon-no-split-qkv": p(["--muon-no-split-qkv"], base=MUON),
    "muon-nesterov": p(["--muon-nesterov"], base=MUON),
    "muon-scale-mode": p(["--muon-scale-mode", "unit_rms_norm"], base=MUON),
    "muon-fp32-matmul-prec": p(["--muon-fp32-matmul-prec", "high"], base=MUON),
    "muon-coefficient-type": p(["--muon-coefficient-type", "simple"], base=MUON),
    "muon-num-ns-steps": p(["--muon-num-ns-steps", "3"], base=MUON),
    "muon-extra-scale-factor": p(["--muon-extra-scale-factor", "2"], base=MUON),
    # blockwise orthogonalizes each TP shard on its own: only TP > 1 shows it
    "muon-tp-mode": p(["--muon-tp-mode", "blockwise"], base=MUON + ["--tensor-model-parallel-size", "2"], np=2),
    "fp16": p(["--fp16"]),
    "bf16": p(["--bf16"]),
    # checkpoint
    "save": p(["--save", "{RUN}/out", "--save-interval", "2"]),
    "load": p(["--load", "{CK}"], ck=True),
    "save-interval": p(["--save-interval", "1"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "save-retain-interval": p(["--save-retain-interval", "2"], base=["--save", "{RUN}/out", "--save-interval", "1"]),
    "no-save-optim": p(["--no-save-optim"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "no-save-rng": p(["--no-save-rng"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "no-load-optim": p(["--no-load-optim"], base=RESUME, ck=True),
    "no-load-rng": p(["--no-load-rng"], base=RESUME, ck=True),
    "finetune": p(["--finetune"], base=RESUME, ck=True),
    "ckpt-step": p(["--ckpt-step", "2"], base=["--load", "{CK}"], ck=True),
    "exit-on-missing-checkpoint": p(["--exit-on-missing-checkpoint"], base=["--load", "{RUN}/no-checkpoint"]),
    "ckpt-fallback-to-intact": p(["--ckpt-fallback-to-intact"], base=["--load", "{CK}"], ck=CKD),
    "async-save": p(["--async-save"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "non-persistent-save-interval": p(["--non-persistent-save-interval", "1"],
                                      base=["--save", "{RUN}/out", "--save-interval", "4", "--non-persistent-ckpt-type",
                                            "global"]),
    "non-persistent-ckpt-type": p(["--non-persistent-ckpt-type", "global"], base=["--load", "{CK}"], ck=CKN),
    "non-persistent-global-ckpt-dir": p(["--non-persistent-global-ckpt-dir", "{RUN}/np"],
                                        base=["--save", "{RUN}/out", "--save-interval", "4",
                                              "--non-persistent-ckpt-type", "global",
                                              "--non-persistent-save-interval", "1"]),
    # logging
    "log-interval": p(["--log-interval", "2"]),
    "log-throughput": p(["--log-throughput"]),
    "tensorboard-dir": p(["--tensorboard-dir", "{RUN}/tb"]),
    "metrics-file": p(["--metrics-file", "{RUN}/other.jsonl"]),
    "log-params-norm": p(["--log-params-norm"]),
    "log-num-zeros-in-grad": p(["--log-num-zeros-in-grad"]),
    "log-timers-to-tensorboard": p(["--log-timers-to-tensorboard"], base=["--tensorboard-dir", "{RUN}/tb"]),
    "log-validation-ppl-to-tensorboard": p(["--log-validation-ppl-to-tensorboard"],
                                           base=["--tensorboard-dir", "{RUN}/tb"]),
    "log-world-size-to-tensorboard": p(["--log-world-size-to-tensorboard"], base=["--tensorboard-dir", "{RUN}/tb"]),
    "no-log-loss-scale-to-tensorboard": p(["--no-log-loss-scale-to-tensorboard"],
                                          base=["--tensorboard-dir", "{RUN}/tb"]),
    "log-memory-to-tensorboard": p(["--log-memory-to-tensorboard"], base=["--tensorboard-dir", "{RUN}/tb"]),
    "timing-log-level": p(["--timing-log-level", "1"]),
    "log-progress": p(["--log-progress"], base=["--save", "{RUN}/out", "--save-interval", "2"]),
    "logging-level": p(["--logging-level", "30"]),
    # The checkpoint's LayerNorm replaces the command line's RMSNorm: the base cannot load it, the probe trains on.
    "use-checkpoint-args": p(["--use-checkpoint-args"], base=RESUME + ["--normalization", "RMSNorm"], ck=True),
    "check-weight-hash-across-dp-replicas-interval": p(["--check-weight-hash-across-dp-replicas-interval", "2"], np=2),
    "profile": p(["--profile", "--profile-step-start", "1", "--profile-step-end", "3"]),
    "profile-step-start": p(["--profile-step-start", "1"], base=["--profile"]),
    "profile-step-end": p(["--profile-step-end", "3"], base=["--profile", "--profile-step-start", "1"]),
    "profile-ranks": p(["--profile-ranks", "1"], base=["--profile", "--profile-step-start", "1", "--profile-step-end", "3"],
                       np=2),
    # parallel: with two ranks where the flag only matters with several
    "tensor-model-parallel-size": p(["--tensor-model-parallel-size", "2"], np=2),
    "pipeline-model-parallel-size": p(["--pipeline-model-parallel-size", "2"], np=2),
    "context-parallel-size": p(["--context-parallel-size", "2"], np=2),
    "sequence-parallel": p(["--sequence-parallel"], base=["--tensor-model-parallel-size", "2"], np=2),
    "use-distributed-optimizer": p(["--use-distributed-optimizer"], np=2),
    "num-distributed-optimizer-instances": p(["--num-distributed-optimizer-instances", "2"],
                                             base=["--use-distributed-optimizer"], np=2),
    "use-megatron-fsdp": p(["--use-megatron-fsdp"], base=["--data-parallel-sharding-strategy", "optim"], np=2),
    "data-parallel-sharding-strategy": p(["--data-parallel-sharding-strategy", "optim"],
                                         base=["--use-megatron-fsdp", "--data-parallel-sharding-strategy", "no_shard"],
                                         np=2),
    "overlap-grad-reduce": p(["--overlap-grad-reduce"], np=2),
    "overlap-param-gather": p(["--overlap-param-gather"],
                              base=["--use-distributed-optimizer", "--overlap-grad-reduce"], np=2),
    "ddp-bucket-size": p(["--ddp-bucket-size", "1000"], np=2),
    "grad-reduce-in-bf16": p(["--grad-reduce-in-bf16"], np=2),
    "num-layers-per-virtual-pipeline-stage": p(["--num-layers-per-virtual-pipeline-stage", "1"],
                                               base=["--pipeline-model-parallel-size", "2", "--num-layers", "4"],
                                               np=2),
    "num-virtual-stages-per-pipeline-rank": p(["--num-virtual-stages-per-pipeline-rank", "2"],
                                              base=["--pipeline-model-parallel-size", "2", "--num-layers", "4"],
                                              np=2),
    "decoder-first-pipeline-num-layers": p(["--decoder-first-pipeline-num-layers", "1"],
                                           base=["--pipeline-model-parallel-size", "2", "--num-layers", "3"], np=2),
    "decoder-last-pipeline-num-layers": p(["--decoder-last-pipeline-num-layers", "1"],
                                          base=["--pipeline-model-parallel-size", "2", "--num-layers", "3"], np=2),
    "distributed-backend": p(["--distributed-backend", "nccl"], np=2),
    "expert-model-parallel-size": p(["--expert-model-parallel-size", "2"], base=MOE, np=2),
    # ETP 1 against the default (TP): the experts whole on each TP rank instead of half of each one's ffn width
    "expert-tensor-parallel-size": p(["--expert-tensor-parallel-size", "1"],
                                     base=MOE + ["--tensor-model-parallel-size", "2"], np=2),
    "moe-token-dispatcher-type": p(["--moe-token-dispatcher-type", "alltoall"],
                                   base=MOE + ["--expert-model-parallel-size", "2"], np=2),
    "distributed-timeout-minutes": p(["--distributed-timeout-minutes", "2"]),
    # backend
    "device": p(["--device", "cuda"]),
    "attention-backend": p(["--attention-backend", "flash"]),
    "deterministic-mode": p(["--deterministic-mode"], np=2),
    # run
    "dry-run": p(["--dry-run"]),
    "dry-run-world-size": p(["--dry-run-world-size", "2"], base=["--dry-run"]),
    "dry-run-device-memory": p(["--dry-run-device-memory", "80"], base=["--dry-run"]),
}
# Consumers that only run on a GPU: the unit test that drives each from parsed flags.
GPU_ONLY = {
    "loss-scale": "config: the fp16 loss-scaling flags reach the loss scaler",
    "initial-loss-scale": "config: the fp16 loss-scaling flags reach the loss scaler",
    "min-loss-scale": "config: the fp16 loss-scaling flags reach the loss scaler",
    "loss-scale-window": "config: the fp16 loss-scaling flags reach the loss scaler",
    "hysteresis": "config: the fp16 loss-scaling flags reach the loss scaler",
}
NOOP_VALUES = {"num-workers": ["8"], "DDP-impl": ["local"], "empty-unused-memory-level": ["0"], "ckpt-format": ["torch"],
               "cross-entropy-fusion-impl": ["native"], "dist-ckpt-format": ["torch_dist"],
               "pipeline-model-parallel-comm-backend": ["nccl"], "local-rank": ["0"], "sharp-enabled-group": ["dp"],
               "nccl-communicator-config-path": ["nccl.yaml"], "high-priority-stream-groups": ["dp", "pp"]}
ACCEPTED_BAD = {"muon-scalar-optimizer": "lion", "dataloader-type": "cyclic", "softmax-type": "learnable", "glu-linear-offset": "1.0",
                "rope-type": "yarn", "expert-tensor-parallel-size": "2", "moe-router-dtype": "fp64", "outer-dp-sharding-strategy": "optim",
                "tensorboard-log-interval": "10", "transformer-impl": "inference_optimized", "cuda-graph-impl": "cudagraph",
                "moe-flex-dispatcher-backend": "nvshmem", "moe-dispatch-fwd-dtype": "mxfp8",
                "moe-combine-bwd-dtype": "mxfp8", "main-grads-dtype": "bf16", "main-params-dtype": "fp16",
                "batch-invariant-backend": "cublas",
                "flash-attention-version": "1", "async-strategy": "torch", "null-tokenizer-pad-id": "0",
                "rerun-mode": "validate_results", "timing-log-option": "max",
                "moe-upcycling-granularity": "2", "cp-comm-type": "a2a"}
# Accepted-without-effect flags Megatron takes only next to other flags: those flags, and the refusal without them.
NOOP_NEEDS = {"no-position-embedding": (ROPE, "taken only with --position-embedding-type rope")}

TIME = [(re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\]"), "[TIME]"),
        (re.compile(r"(elapsed time per iteration \(ms\)|tokens per second|throughput per GPU \(TFLOP/s/GPU\)): [0-9.]+"),
         r"\1: X"),
        (re.compile(r"\([0-9.]+ s\)"), "(X s)"),
        (re.compile(r"\([0-9.]+ s wall\)"), "(X s wall)"),
        # --profile's table rows: name and count kept, the measured times masked
        (re.compile(r"^(.*\S +\d+) +[0-9.]+ +[0-9.]+ +[0-9.]+$", re.M), r"\1 T"),
        (re.compile(r"[0-9.]+ (ms|MB/s|GB/s)"), r"X \1")]
METRIC_TIME = ("time", "elapsed_ms_per_iteration", "tokens_per_second", "throughput_tflops_per_gpu")


def tensorboard_tags(path):
    """The scalar tags of a TensorBoard event file (its name holds the time and pid; its values, timings)."""
    def varint(b, i):
        v = sh = 0
        while True:
            v |= (b[i] & 0x7F) << sh
            sh += 7
            i += 1
            if b[i - 1] < 0x80:
                return v, i

    def fields(b):  # (field number, wire type, payload) of a protobuf message
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            f, w = key >> 3, key & 7
            if w == 0:
                v, i = varint(b, i)
            elif w == 1:
                v, i = b[i:i + 8], i + 8
            elif w == 5:
                v, i = b[i:i + 4], i + 4
            else:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            yield f, w, v

    data, tags, i = open(path, "rb").read(), set(), 0
    while i + 12 <= len(data):
        n = int.from_bytes(data[i:i + 8], "little")
        event = data[i + 12:i + 12 + n]
        i += 12 + n + 4
        for f, w, summary in fields(event):
            if f == 5 and w == 2:
                for vf, vw, value in fields(summary):
                    if vf == 1 and vw == 2:
                        tags.update(t.decode() for tf, tw, t in fields(value) if tf == 1 and tw == 2)
    return " | ".join(sorted(tags))


def run(args, np, run_dir, ck, extra_env=None):
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    args = sub(args, run_dir)
    if ck:
        ck_dir = with_ck(run_dir, ck)
        args = [x.replace("{CK}", ck_dir) for x in args]
    if "--metrics-file" not in args and "--dry-run" not in args:
        args += ["--metrics-file", os.path.join(run_dir, "metrics.jsonl")]
    cmd = [PRETRAIN] + args
    if np > 1:
        cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np)] + cmd
    env = dict(os.environ, OMP_NUM_THREADS="1", **(extra_env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    log = (r.stdout + r.stderr).replace(run_dir, "{RUN}")
    for rx, rep in TIME:
        log = rx.sub(rep, log)
    files = []
    metrics = []
    for root, _, names in os.walk(run_dir):
        for n in sorted(names):
            path = os.path.join(root, n)
            rel = os.path.relpath(path, run_dir)
            if rel.startswith("ck/") or rel.startswith("ck" + os.sep):
                rel = "ck/" + rel[3:]
            if n.endswith(".jsonl"):
                for line in open(path):
                    rec = json.loads(line)
                    for k in METRIC_TIME:
                        rec.pop(k, None)
                    metrics.append((rel, json.dumps(rec, sort_keys=True)))
            elif n == "metadata.json":
                meta = json.load(open(path))
                meta.pop("args", None)
                meta.pop("crc32c", None)  # a checksum of the whole object, args included
                files.append((rel, json.dumps(meta, sort_keys=True)))
            elif n.endswith(".safetensors"):
                files.append((rel, hashlib.sha256(open(path, "rb").read()).hexdigest()))
            elif n.startswith("events.out.tfevents."):
                files.append((os.path.join(os.path.dirname(rel), "events.out.tfevents"), tensorboard_tags(path)))
            else:
                files.append((rel, ""))
    return {"rc": r.returncode, "log": log, "files": sorted(files), "metrics": metrics}


def args_of(spec, which):
    data = spec["pdata"] if which == "probe" else spec["data"]
    extra = spec["base"] + (spec["probe"] if which == "probe" else [])
    args = COMMON + data + extra
    if "--train-samples" in extra:  # sample-based runs drop --train-iters
        i = args.index("--train-iters")
        del args[i:i + 2]
    if "--step-batch-size-schedule" in extra:  # the schedule gives the global batch size
        i = args.index("--global-batch-size")
        del args[i:i + 2]
    return args


flags = json.loads(subprocess.run([PRETRAIN, "--list-flags"], check=True, capture_output=True, text=True).stdout)
# The generated page of flags accepted without effect (scripts/gen_flag_docs.py): every such flag has its row.
NOOP_PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "flags-without-effect.md")
NOOP_ROWS = open(NOOP_PAGE).read()


def has_noop_row(name):  # "| `--manual-gc` |" or "| `--ckpt-format N` |", not "| `--manual-gc-interval N` |"
    return re.search(r"^\| `--" + re.escape(name) + r"[` ]", NOOP_ROWS, re.M) is not None


only = set(x for x in a.only.split(",") if x)
failures, checked = [], 0
# (name, value, what) of the accepted flags that one tiny run checks together: each must be taken with its
# value (and, without effect, print its info line); a failing run is retried one flag at a time to name it.
together = []
bases = {}
for f in flags:
    name, status = f["name"], f["status"]
    if only and name not in only:
        continue
    if status == "implemented":
        if name in GPU_ONLY:
            checked += 1
            continue
        spec = PROBES.get(name)
        if spec is None:
            failures.append(f"--{name}: bound to a field but has no probe in flags_reach_consumers.py")
            continue
        key = json.dumps([args_of(spec, "base"), spec["np"], spec["ck"], spec["env"]])
        if key not in bases:
            bases[key] = run(args_of(spec, "base"), spec["np"], os.path.join(a.tmp, "run_base"), spec["ck"],
                             spec["env"])
        base = bases[key]
        got = run(args_of(spec, "probe"), spec["np"], os.path.join(a.tmp, "run_probe"), spec["ck"], spec["env"])
        checked += 1
        if got == base:
            failures.append(f"--{name}: the run with it prints, writes and logs exactly what the run without it does "
                            f"(no code reads it?)\n    base: {' '.join(args_of(spec, 'base'))}")
        else:
            print(f"ok  --{name}: reaches its consumer" + (" (mpirun -np 2)" if spec["np"] > 1 else ""))
    elif status == "alias":
        # The alias in place of its target, with a value the default would not give.
        target = f["alias_of"]
        # The target's value (and the flags it needs) for a run that succeeds.
        value, extra = {"save-interval": (["1"], ["--save", "{RUN}/out"]),
                        "tiktoken-special-tokens": (["<unk>"], [])}.get(target, (None, None))
        if value is None:
            failures.append(f"--{name}: alias of --{target}, which has no alias probe value")
            continue
        want = run(COMMON + MOCK + extra + ["--" + target] + value, 1, os.path.join(a.tmp, "run_base"), False)
        got = run(COMMON + MOCK + extra + ["--" + name] + value, 1, os.path.join(a.tmp, "run_probe"), False)
        checked += 1
        if got != want or got["rc"] != 0:
            failures.append(f"--{name}: does not do what --{target} does")
        else:
            print(f"ok  --{name}: the same as --{target}")
    elif status == "accepted, no effect":
        value = [] if f["kind"] == "switch" else NOOP_VALUES.get(name, ["1"])
        needs, refusal = NOOP_NEEDS.get(name, ([], None))
        checked += 1
        if not has_noop_row(name):
            failures.append(f"--{name}: missing from docs/flags-without-effect.md (regenerate it: scripts/gen_flag_docs.py)")
        if not needs:
            together.append((name, value, "accepted"))  # checked in one run with the others (below)
            continue
        r = run(COMMON + MOCK + needs + ["--" + name] + value, 1, os.path.join(a.tmp, "run_noop"), False)
        if refusal:
            alone = run(COMMON + MOCK + ["--" + name] + value, 1, os.path.join(a.tmp, "run_noop"), False)
            if alone["rc"] == 0 or refusal not in alone["log"]:
                failures.append(f"--{name}: without {' '.join(needs)} it must be refused ('{refusal}')")
        if r["rc"] != 0 or f"--{name}: accepted for compatibility" not in r["log"]:
            failures.append(f"--{name}: accepted without effect, but the run failed or printed no info line:\n{r['log'][-500:]}")
        else:
            print(f"ok  --{name}: accepted, says it has no effect")
    elif status == "accepted values only":
        checked += 1
        if name not in ACCEPTED_BAD:
            failures.append(f"--{name}: accepted for some values, but ACCEPTED_BAD has no value it must refuse")
            continue
        # The refusal stops at parsing (cheap); the allowed values all run, in one run with the others (below).
        bad = run(COMMON + MOCK + ["--" + name, ACCEPTED_BAD[name]], 1, os.path.join(a.tmp, "run_noop"), False)
        if not has_noop_row(name):
            failures.append(f"--{name}: missing from docs/flags-without-effect.md (regenerate it: scripts/gen_flag_docs.py)")
        if bad["rc"] == 0 or f"gptrain takes only {f['allowed'][0]}" not in bad["log"]:
            failures.append(f"--{name}: {ACCEPTED_BAD[name]} must be refused naming {f['allowed']}")
        else:
            together.append((name, [f["allowed"][0]], "takes"))
    elif status == "rejected":
        r = subprocess.run([PRETRAIN] + COMMON + MOCK + ["--" + name, "1"], capture_output=True, text=True)
        checked += 1
        if r.returncode == 0 or f"--{name} is a Megatron flag that gptrain does not implement" not in r.stderr + r.stdout:
            failures.append(f"--{name}: should be refused by name with the reason")
    else:
        failures.append(f"--{name}: unknown status {status}")



def check_accepted(names_values):
    """Runs the accepted flags with their values; returns the log when the run succeeded, else None."""
    extra = [x for name, value, _ in names_values for x in ["--" + name] + value]
    r = run(COMMON + MOCK + extra, 1, os.path.join(a.tmp, "run_noop"), False)
    return r["log"] if r["rc"] == 0 else None


if together:
    log = check_accepted(together)
    for item in together:
        name, value, what = item
        alone = log if log is not None else check_accepted([item])
        if alone is None:
            failures.append(f"--{name} {' '.join(value)}: accepted, but the run with it failed")
        elif what == "accepted" and f"--{name}: accepted for compatibility" not in alone:
            failures.append(f"--{name}: accepted without effect, but printed no info line")
        else:
            print(f"ok  --{name}: " + ("accepted, says it has no effect" if what == "accepted"
                                       else f"takes {' '.join(value)}"))

# GPU-only consumers: their unit test must exist (it runs in the unit label).
names = subprocess.run([os.path.join(a.bin, "unit_core"), "--list-test-names-only"], capture_output=True,
                       text=True).stdout
for flag, test in GPU_ONLY.items():
    if only and flag not in only:
        continue
    if test not in names:
        failures.append(f"--{flag}: its consumer's unit test '{test}' does not exist")
    else:
        print(f"ok  --{flag}: reaches its consumer in unit test '{test}' (runs only on a GPU)")
stale = [n for n in PROBES if n not in {f["name"] for f in flags}]
if stale and not only:
    failures.append(f"probes for flags that no longer exist: {', '.join(stale)}")
print(f"{checked} flags checked, {len(failures)} failures")
for msg in failures:
    print("FAIL " + msg)
sys.exit(1 if failures else 0)
