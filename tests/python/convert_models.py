"""Tiny random transformers models, one or more per family gptrain converts, with non-trivial norms
and biases (and a larger init) so that a swapped or mis-permuted tensor changes the logits."""
import torch
from transformers import (GemmaConfig, GemmaForCausalLM, GPT2Config, GPT2LMHeadModel, GPTJConfig, GPTJForCausalLM,
                          GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, MixtralConfig, MixtralForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM)


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


def llama(bias=False, tie=False, seed=3, mlp_bias=None, rope_scaling=None):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                      attention_bias=bias, mlp_bias=bias if mlp_bias is None else mlp_bias, tie_word_embeddings=tie, initializer_range=0.1,
                      rope_scaling=rope_scaling)
    return _randomize_vectors(LlamaForCausalLM(cfg), seed)


def llama3_scaling(factor, low=1.0, high=4.0, original=32):
    """Llama-3.1/3.2 rope_scaling; a small original length, so the scaling changes angles at short positions."""
    return {"rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": high,
            "original_max_position_embeddings": original}


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


def qwen2(tie=True, seed=13):
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1e6,
                      tie_word_embeddings=tie, use_sliding_window=False, initializer_range=0.1)
    return _randomize_vectors(Qwen2ForCausalLM(cfg), seed)


def qwen2_moe(seed=15, step=1, dense=(0,), norm_topk=False):
    torch.manual_seed(seed)
    cfg = Qwen2MoeConfig(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6,
                         rope_theta=1e6, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                         shared_expert_intermediate_size=48, decoder_sparse_step=step, mlp_only_layers=list(dense),
                         norm_topk_prob=norm_topk, router_aux_loss_coef=0.001, tie_word_embeddings=False,
                         use_sliding_window=False, initializer_range=0.1)
    return _randomize_vectors(Qwen2MoeForCausalLM(cfg), seed)


def mistral(seed=13, window=3, tie=False):
    torch.manual_seed(seed)
    cfg = MistralConfig(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=24, max_position_embeddings=64, rms_norm_eps=1e-5,
                        rope_theta=10000.0, sliding_window=window, tie_word_embeddings=tie, initializer_range=0.1)
    return _randomize_vectors(MistralForCausalLM(cfg), seed)


def qwen3(moe=False, tie=False, seed=13):
    """transformers 4.46.3 has no Qwen3: the torch reference with transformers' names and config keys."""
    import qwen3_reference as q
    sizes = dict(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, max_position_embeddings=64, rms_norm_eps=1e-6,
                 rope_theta=1e6, tie_word_embeddings=tie, initializer_range=0.1)
    cfg = (q.qwen3_moe_config(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=48, mlp_only_layers=[1],
                              norm_topk_prob=True, router_aux_loss_coef=0.001, **sizes) if moe
           else q.qwen3_config(**sizes))
    return _randomize_vectors(q.Qwen3ForCausalLM(cfg, seed), seed)


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
    "llama31_rope_scaling": lambda: llama(False, False, 13, rope_scaling=llama3_scaling(8.0)),
    "llama32_tied_rope_scaling": lambda: llama(False, True, 14, rope_scaling=llama3_scaling(32.0, 1.5, 6.0, 40)),
    "llama_rope_linear": lambda: llama(False, False, 15, rope_scaling={"rope_type": "linear", "factor": 3.0}),
    "llama_rope_yarn": lambda: llama(False, False, 16, rope_scaling={"rope_type": "yarn", "factor": 8.0,
                                                                     "beta_fast": 8.0, "beta_slow": 0.5}),
    "neox_parallel": lambda: neox(True, 0.25, "gelu", 4),
    "neox_sequential": lambda: neox(False, 0.5, "gelu_new", 7),
    "gptj": lambda: gptj(8, 5),
    "gptj_full_rotary": lambda: gptj(16, 8),
    "mixtral": lambda: mixtral(10, 4, 2),
    "mixtral_top1_of_3": lambda: mixtral(12, 3, 1),
    "qwen2_tied": lambda: qwen2(True, 13),
    "qwen2_untied": lambda: qwen2(False, 14),
    "qwen2_moe_dense_first": lambda: qwen2_moe(15, 1, (0,), False),
    "qwen2_moe_step2_renormalised": lambda: qwen2_moe(16, 2, (), True),  # layer 1 sparse by decoder_sparse_step
    "mistral_window3": lambda: mistral(13, 3, False),  # 3 of the 6 test tokens: the window matters
    "mistral_full_tied": lambda: mistral(14, None, True),
    "qwen3_tied": lambda: qwen3(False, True, 13),
    "qwen3_moe_dense_layer_1": lambda: qwen3(True, False, 14),
    "gemma_mqa": lambda: gemma(13, 1),
}

# convert_from_hf flags a model's exact round trip needs: Gemma's norm weights are w of a 1 + w scale, kept
# as they are only in a --apply-layernorm-1p checkpoint.
FROM_HF_FLAGS = {"gemma_mqa": ["--apply-layernorm-1p"]}
