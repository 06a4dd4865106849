"""Tiny random transformers models, one per family gptrain converts, with non-trivial norms and
biases so that a swapped or mis-permuted tensor changes the logits."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def _randomize_vectors(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 + (1.0 if n.endswith("weight") else 0.0))
    return m


def gpt2(act="gelu_new", tie=True, seed=1):
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=50257, n_positions=64, n_embd=64, n_layer=2, n_head=4, activation_function=act,
                     tie_word_embeddings=tie, initializer_range=0.1, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _randomize_vectors(GPT2LMHeadModel(cfg), seed)


MODELS = {
    "gpt2_tanh_tied": lambda: gpt2("gelu_new", True, 1),
    "gpt2_erf_untied": lambda: gpt2("gelu", False, 2),
}
