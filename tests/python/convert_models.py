"""Tiny random transformers models, one or more per family gptrain converts, with non-trivial norms
and biases (and a larger init) so that a swapped or mis-permuted tensor changes the logits."""
import torch
from transformers import (GemmaConfig, GemmaForCausalLM, GPT2Config, GPT2LMHeadModel, GPTJConfig, GPTJForCausalLM,
                          GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM, MixtralConfig,
                          MixtralForCausalLM)


def _randomize_vectors(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 + (1.0 if n.endswith("weight") else 0.0))  # 1-D weights are norms
    return m


def gpt2(act="gelu_new", tie=True, seed=1):
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=50257, n_positions=64, n_embd=64, n_layer=2, n_head=4, activation_function=act,
                     tie_word_embeddings=tie, initializer_range=0.1, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _randomize_vectors(GPT2LMHeadModel(cfg), seed)


def llama(bias=False, tie=False, seed=3, mlp_bias=None):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                      attention_bias=bias, mlp_bias=bias if mlp_bias is None else mlp_bias, tie_word_embeddings=tie, initializer_range=0.1)
    return _randomize_vectors(LlamaForCausalLM(cfg), seed)


def neox(parallel=True, pct=0.25, act="gelu", seed=4):
    torch.manual_seed(seed)
    cfg = GPTNeoXConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                        rotary_pct=pct, rotary_emb_base=10000, max_position_embeddings=64, use_parallel_residual=parallel,
                        hidden_act=act, initializer_range=0.1, attention_dropout=0.0, hidden_dropout=0.0)
    return _randomize_vectors(GPTNeoXForCausalLM(cfg), seed)


def gptj(rotary_dim=8, seed=5):
    torch.manual_seed(seed)
    cfg = GPTJConfig(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4, rotary_dim=rotary_dim,
                     initializer_range=0.1, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _randomize_vectors(GPTJForCausalLM(cfg), seed)


def mixtral(seed=10, experts=4, topk=2):
    torch.manual_seed(seed)
    cfg = MixtralConfig(vocab_size=1000, hidden_size=64, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=1e6,
                        num_local_experts=experts, num_experts_per_tok=topk, sliding_window=None,
                        tie_word_embeddings=False, initializer_range=0.1, router_aux_loss_coef=0.02)
    return _randomize_vectors(MixtralForCausalLM(cfg), seed)


def gemma(seed=13, kv_heads=1):
    torch.manual_seed(seed)
    cfg = GemmaConfig(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=kv_heads, head_dim=32, max_position_embeddings=64, rms_norm_eps=1e-6,
                      rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh", initializer_range=0.1)
    return _randomize_vectors(GemmaForCausalLM(cfg), seed)


MODELS = {
    "gpt2_tanh_tied": lambda: gpt2("gelu_new", True, 1),
    "gpt2_erf_untied": lambda: gpt2("gelu", False, 2),
    "llama_gqa": lambda: llama(False, False, 3),
    "llama_bias_tied": lambda: llama(True, True, 6),
    "llama_mlp_bias_only": lambda: llama(False, False, 9, mlp_bias=True),  # gptrain --disable-bias-attention
    "neox_parallel": lambda: neox(True, 0.25, "gelu", 4),
    "neox_sequential": lambda: neox(False, 0.5, "gelu_new", 7),
    "gptj": lambda: gptj(8, 5),
    "gptj_full_rotary": lambda: gptj(16, 8),
    "mixtral": lambda: mixtral(10, 4, 2),
    "mixtral_top1_of_3": lambda: mixtral(12, 3, 1),
    "gemma_mqa": lambda: gemma(13, 1),
}

# convert_from_hf flags a model's exact round trip needs: Gemma's norm weights are w of a 1 + w scale, kept
# as they are only in a --apply-layernorm-1p checkpoint.
FROM_HF_FLAGS = {"gemma_mqa": ["--apply-layernorm-1p"]}
