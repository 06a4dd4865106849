#!/usr/bin/env python3
"""PyTorch baseline for scripts/gpu_check.sh's benchmark table, run in the same invocation on the same GPU.

GPT-2 shapes as transformers' GPT2LMHeadModel (SDPA attention, fp32 master weights under bf16 autocast,
fused torch AdamW, clip 1.0), seq 1024, global batch = micro-batch, random tokens; 12 iterations, the mean
of iterations 9-12 reported: the shapes, batch and dropout of the gptrain rows, so tokens/s compare directly.
One line per run:
  BASELINE <model> <mbs> <dropout> <eager|compile> <tokens/s|oom|error> <peak MiB> <ms per iteration>

  python3 tests/bench/bench_gpu_torch.py --runs 124M:32,350M:16,1.5B:8 --dropout 0.1 --modes eager,compile
"""
import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

SHAPES = {"124M": (12, 768, 12), "350M": (24, 1024, 16), "1.5B": (48, 1600, 25)}


def run(name, mbs, dropout, mode):
    layers, hidden, heads = SHAPES[name]
    cfg = GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, n_positions=1024, vocab_size=50257,
                     resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout)
    cfg._attn_implementation = "sdpa"
    with torch.device("cuda"):  # initialised on the GPU: seconds, not minutes, for 1.5B
        model = GPT2LMHeadModel(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1, fused=True)
    step_model = torch.compile(model) if mode == "compile" else model
    gen = torch.Generator(device="cuda").manual_seed(1234)
    times = []
    for _ in range(12):
        x = torch.randint(0, 50257, (mbs, 1025), device="cuda", generator=gen)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(input_ids=x[:, :-1], labels=x[:, 1:]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = 1000 * sum(times[8:]) / 4
    return f"{mbs * 1024 / (ms / 1000):.0f} {torch.cuda.max_memory_allocated() >> 20} {ms:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="124M:32,350M:16,1.5B:8", help="model:micro-batch, comma separated")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--modes", default="eager", help="eager, compile or both (comma separated)")
    a = ap.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}",
          flush=True)
    for mode in a.modes.split(","):
        for spec in a.runs.split(","):
            name, mbs = spec.split(":")
            try:
                result = run(name, int(mbs), a.dropout, mode)
            except torch.cuda.OutOfMemoryError:
                result = "oom - -"
            except Exception as e:  # a baseline that cannot run is reported, not fatal
                result = f"error - - ({type(e).__name__}: {str(e)[:120]})"
            print(f"BASELINE {name} {mbs} {a.dropout:g} {mode} {result}", flush=True)
            torch._dynamo.reset()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
