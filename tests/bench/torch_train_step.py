#!/usr/bin/env python3
"""The baseline of bench_cpu_train.sh, run in the same invocation: one training step of the same GPT-2
shape in PyTorch on the CPU (transformers' GPT2LMHeadModel, fp32, dropout off, torch.optim.AdamW),
micro-batch 4 x seq 64 of random tokens. Prints the mean seconds per step over steps 6-10, as
pretrain_gpt's log line of iteration 10 averages its iterations 6-10.

    torch_train_step.py LAYERS HIDDEN HEADS THREADS
"""
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

layers, hidden, heads, threads = map(int, sys.argv[1:5])
torch.set_num_threads(threads)
torch.manual_seed(0)
cfg = GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, n_positions=1024, vocab_size=50304,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = GPT2LMHeadModel(cfg)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
tokens = torch.randint(0, 50257, (4, 64))
times = []
for step in range(11):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    times.append(time.perf_counter() - t0)
print(f"{sum(times[5:10]) / 5:.4f}")
