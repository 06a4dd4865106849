"""Training parity of pretrain_gpt with Hugging Face transformers GPT2LMHeadModel + torch.optim.AdamW.

  hf_train_parity.py init  HF_DIR SEED          write a random tiny GPT-2 (safetensors) to HF_DIR
  hf_train_parity.py check HF_DIR METRICS ARGS [OPTIONS]
                                                 train the HF model on the same batches as pretrain_gpt
                                                 (--mock-data; ARGS: iters gbs mbs seq vocab seed lr wd
                                                 beta1 beta2 eps clip) and compare per-iteration losses
                                                 and grad norms with pretrain_gpt's JSONL metrics.
     OPTIONS (the pretrain_gpt flags of the run, with a constant LR schedule):
       --eod-mask-loss             no loss where the input token is the end-of-document (vocab - 1)
       --calculate-per-token-loss  gradient of the global batch's token sum / its loss-token count
       --decoupled-lr X            LR X for the word embeddings (tied with the output layer)
       --contrast                  also train the other loss normalization and require its losses to
                                   differ from ours by well over the tolerance (the run can tell them apart)

The batches are pretrain_gpt's --mock-data samples, regenerated here from their definition
(core/train/mock_dataset.cpp): sample i of the train split is a function of (seed * 3, i) through
splitmix64. Dropout is off; AdamW decays 2-D tensors only (as Megatron: no decay on biases and norms);
gradients are clipped with clip_grad_norm_; the loss of a micro-batch is its token mean divided by the
number of micro-batches (gradient accumulation), reported as the mean over the global batch; with
--calculate-per-token-loss each micro-batch's token-summed loss is divided by the global batch's loss tokens.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

M64 = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def mock_sample(seed, i, seq, vocab):
    """Sample i (seq + 1 tokens) of MockSampleDataset(seed, vocab, eod = vocab - 1)."""
    state = mix(seed ^ mix(i))

    def nxt():
        nonlocal state
        state = mix(state)
        return state

    run = 1 + nxt() % seq
    start = nxt() % vocab
    stride = 1 + nxt() % 7
    out = []
    for t in range(seq + 1):
        if t < run:
            out.append((start + t * stride) % vocab)
        elif t == run:
            out.append(vocab - 1)
        else:
            out.append(nxt() % vocab)
    return out


def init(hf_dir, seed):
    torch.manual_seed(int(seed))
    cfg = GPT2Config(vocab_size=100, n_positions=16, n_embd=32, n_layer=2, n_head=4, activation_function="gelu_new",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5,
                     initializer_range=0.05, bos_token_id=99, eos_token_id=99)
    model = GPT2LMHeadModel(cfg)
    with torch.no_grad():  # non-trivial norms and biases so their gradients matter
        for n, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.05 * torch.randn_like(p))
    model.save_pretrained(hf_dir, safe_serialization=True)


def train_reference(hf_dir, iters, gbs, mbs, seq, vocab, seed, lr, wd, beta1, beta2, eps, clip, eod_mask_loss,
                    per_token, decoupled_lr):
    """Per-iteration (loss, grad norm) of the HF model, and how far its parameters moved."""
    torch.manual_seed(0)
    model = GPT2LMHeadModel.from_pretrained(hf_dir, torch_dtype=torch.float32)
    model.train()
    # Megatron's groups: weight decay on matrices; --decoupled-lr for the word embeddings (which HF ties
    # to the output layer; the position table keeps the default LR).
    emb = model.transformer.wte.weight
    decay = [p for _, p in model.named_parameters() if p.dim() >= 2 and p is not emb]
    no_decay = [p for _, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": [emb], "weight_decay": wd, "lr": lr if decoupled_lr is None else decoupled_lr},
              {"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(beta1, beta2), eps=eps)
    before = [p.detach().clone() for p in model.parameters()]
    data_seed = (seed * 3) & M64
    n_micro = gbs // mbs
    eod = vocab - 1
    ref = []
    for it in range(iters):
        opt.zero_grad(set_to_none=True)
        batches = []
        for k in range(n_micro):
            rows = [mock_sample(data_seed, it * gbs + k * mbs + r, seq, vocab) for r in range(mbs)]
            window = torch.tensor(rows, dtype=torch.long)
            x, y = window[:, :-1], window[:, 1:]
            mask = (x != eod).float() if eod_mask_loss else torch.ones_like(x, dtype=torch.float32)
            batches.append((x, y, mask))
        global_tokens = sum(m.sum().item() for _, _, m in batches)
        loss_sum, tokens = 0.0, 0.0
        for x, y, mask in batches:
            logits = model(input_ids=x).logits
            per_tok = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
            summed = (per_tok * mask.reshape(-1)).sum()
            n = mask.sum().item()
            if per_token:
                (summed / global_tokens).backward()
            else:
                (summed / n / n_micro).backward()
            loss_sum += summed.item()
            tokens += n
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip).item()
        opt.step()
        ref.append((loss_sum / tokens, norm))
    moved = max((p.detach() - b).abs().max().item() for p, b in zip(model.parameters(), before))
    return ref, moved


def check(hf_dir, metrics_path, iters, gbs, mbs, seq, vocab, seed, lr, wd, beta1, beta2, eps, clip,
          eod_mask_loss=False, per_token=False, decoupled_lr=None, contrast=False):
    shape = (hf_dir, iters, gbs, mbs, seq, vocab, seed, lr, wd, beta1, beta2, eps, clip, eod_mask_loss)
    ref, moved = train_reference(*shape, per_token, decoupled_lr)

    ours = [json.loads(line) for line in open(metrics_path)]
    ours = [r for r in ours if r["event"] == "train"]
    assert [r["iteration"] for r in ours] == list(range(1, iters + 1)), "expected one metrics record per iteration"
    worst_loss = worst_norm = 0.0
    for r, (loss, norm) in zip(ours, ref):
        ol, on = r["losses"]["lm loss"], r["grad_norm"]
        el, en = abs(ol - loss) / abs(loss), abs(on - norm) / abs(norm)
        worst_loss, worst_norm = max(worst_loss, el), max(worst_norm, en)
        print(f"iter {r['iteration']:2d}  gptrain {ol:.7f}  transformers {loss:.7f}  rel {el:.2e}   "
              f"grad norm {on:.5f} vs {norm:.5f}")
    print(f"max relative loss error {worst_loss:.3e}, max relative grad-norm error {worst_norm:.3e}")
    if contrast:
        other, _ = train_reference(*shape, not per_token, decoupled_lr)
        gap = max(abs(a[0] - b[0]) / abs(b[0]) for a, b in zip(other, ref))
        print(f"the other loss normalization would differ by up to {gap:.3e} relative")
        assert gap > 20 * 1e-5, f"the two normalizations differ by only {gap:.3e}: the check cannot tell them apart"
    assert moved > 1e-2, f"the weights barely moved ({moved:.2e}): iterations 2-10 would not test the optimizer"
    assert worst_loss < 1e-5, f"loss parity {worst_loss:.3e} exceeds 1e-5"
    # The log line prints 3 decimals of the grad norm; JSONL keeps the double.
    assert worst_norm < 1e-4, f"grad-norm parity {worst_norm:.3e} exceeds 1e-4"


if __name__ == "__main__":
    if sys.argv[1] == "init":
        init(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check":
        a = sys.argv[4:16]
        opts = sys.argv[16:]
        decoupled = float(opts[opts.index("--decoupled-lr") + 1]) if "--decoupled-lr" in opts else None
        check(sys.argv[2], sys.argv[3], int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]), float(a[6]),
              float(a[7]), float(a[8]), float(a[9]), float(a[10]), float(a[11]), "--eod-mask-loss" in opts,
              "--calculate-per-token-loss" in opts, decoupled, "--contrast" in opts)
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")
