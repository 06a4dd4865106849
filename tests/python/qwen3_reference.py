"""A small torch reference of Qwen3ForCausalLM and Qwen3MoeForCausalLM for the parity tests: transformers 4.46.3
(the test environment) has neither class. Written from the published architecture, it keeps transformers'
tensor names and config.json keys, so the directory save_pretrained writes is what a transformers version with
Qwen3 writes and reads:

  model.embed_tokens.weight, model.norm.weight, lm_head.weight (absent with tie_word_embeddings)
  model.layers.N.input_layernorm.weight, .post_attention_layernorm.weight
  model.layers.N.self_attn.{q,k,v,o}_proj.weight, .self_attn.{q,k}_norm.weight (head_dim)
  model.layers.N.mlp.{gate,up,down}_proj.weight                         (dense layers)
  model.layers.N.mlp.gate.weight, .mlp.experts.E.{gate,up,down}_proj.weight   (sparse layers)

The block: pre-norm residual; attention with q/k projected, reshaped to heads of head_dim, each head
RMS-normalized (q_norm / k_norm, eps rms_norm_eps) and then rotated (half-split RoPE, rope_theta), GQA, causal
softmax in fp32, o_proj; SwiGLU MLP. A sparse layer (not in mlp_only_layers and (N + 1) % decoder_sparse_step
== 0) routes each token with softmax(gate(x)) over all experts, keeps the top num_experts_per_tok, renormalises
them when norm_topk_prob, and sums the chosen experts' SwiGLU outputs by those weights (no shared expert)."""
import json
import os
import types

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.nh, self.nkv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        C = c["hidden_size"]
        self.q_proj = nn.Linear(C, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(C, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(C, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, C, bias=False)
        self.q_norm = RMSNorm(self.hd, c["rms_norm_eps"])
        self.k_norm = RMSNorm(self.hd, c["rms_norm_eps"])
        self.theta = c["rope_theta"]

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, T, self.nh, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(B, T, self.nkv, self.hd)).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.int64).float() / self.hd))
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
        emb = torch.cat([ang, ang], dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(2, 3)) * self.hd ** -0.5
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd))


class MLP(nn.Module):
    def __init__(self, C, F_):
        super().__init__()
        self.gate_proj = nn.Linear(C, F_, bias=False)
        self.up_proj = nn.Linear(C, F_, bias=False)
        self.down_proj = nn.Linear(F_, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SparseMoe(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.k, self.norm_topk = c["num_experts_per_tok"], c["norm_topk_prob"]
        self.gate = nn.Linear(c["hidden_size"], c["num_experts"], bias=False)
        self.experts = nn.ModuleList(MLP(c["hidden_size"], c["moe_intermediate_size"]) for _ in range(c["num_experts"]))

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        self.router_logits = logits = self.gate(x)
        w = F.softmax(logits, dim=1, dtype=torch.float32)
        w, chosen = torch.topk(w, self.k, dim=-1)
        if self.norm_topk:
            w = w / w.sum(dim=-1, keepdim=True)
        w = w.to(x.dtype)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            if rows.numel():
                out = out.index_add(0, rows, expert(x[rows]) * w[rows, slot, None])
        return out.reshape(shape)


class Layer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        sparse = (c.get("num_experts", 0) > 0 and i not in (c.get("mlp_only_layers") or [])
                  and (i + 1) % c.get("decoder_sparse_step", 1) == 0)
        self.mlp = SparseMoe(c) if sparse else MLP(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c, i) for i in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class Qwen3ForCausalLM(nn.Module):
    """Qwen3 (model_type qwen3) or Qwen3-MoE (model_type qwen3_moe), by the config dict."""

    def __init__(self, config, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.config = types.SimpleNamespace(**config)
        self.cfg = dict(config)
        self.model = Body(config)
        self.tied = config["tie_word_embeddings"]
        if not self.tied:
            self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, config["initializer_range"])

    def forward(self, input_ids):
        h = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            h = layer(h)
        h = self.model.norm(h)
        logits = F.linear(h, self.model.embed_tokens.weight if self.tied else self.lm_head.weight)
        return types.SimpleNamespace(logits=logits)

    def router_logits(self):
        """The sparse layers' router logits of the last forward, in layer order."""
        return [l.mlp.router_logits for l in self.model.layers if isinstance(l.mlp, SparseMoe)]

    def save_pretrained(self, d, safe_serialization=True):
        os.makedirs(d, exist_ok=True)
        json.dump(self.cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        save_file({k: v.detach().contiguous() for k, v in self.state_dict().items()},
                  os.path.join(d, "model.safetensors"), metadata={"format": "pt"})


def from_pretrained(d):
    """The model a directory holds (config.json, model.safetensors or an index and its shards). The config must
    carry every key of Qwen3Config / Qwen3MoeConfig (qwen3_config / qwen3_moe_config), so a transformers
    version with Qwen3 reads it without falling back to a default; every tensor must be there, none extra."""
    from safetensors.torch import load_file
    c = json.load(open(os.path.join(d, "config.json")))
    want = {"qwen3": ("Qwen3ForCausalLM", qwen3_config()), "qwen3_moe": ("Qwen3MoeForCausalLM", qwen3_moe_config())}
    if c.get("model_type") not in want:
        raise ValueError(f"{d}: model_type {c.get('model_type')!r}, expected qwen3 or qwen3_moe")
    arch, keys = want[c["model_type"]]
    missing = sorted(set(keys) - set(c) - {"torch_dtype"})
    if c.get("architectures") != [arch] or missing:
        raise ValueError(f"{d}: architectures {c.get('architectures')}, expected [{arch!r}]; missing keys {missing}")
    index = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    state = {}
    for f in files:
        state.update(load_file(os.path.join(d, f)))
    m = Qwen3ForCausalLM(c)
    m.load_state_dict(state, strict=True)
    return m.eval()


def qwen3_config(**kw):
    """config.json of a Qwen3 model (Qwen3Config's keys and defaults where the test does not set them)."""
    c = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936, hidden_size=4096,
             intermediate_size=22016, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
             head_dim=128, hidden_act="silu", max_position_embeddings=32768, initializer_range=0.02, rms_norm_eps=1e-6,
             use_cache=True, tie_word_embeddings=False, rope_theta=10000.0, rope_scaling=None, attention_bias=False,
             use_sliding_window=False, sliding_window=None, max_window_layers=28, attention_dropout=0.0,
             torch_dtype="float32")
    c.update(kw)
    return c


def qwen3_moe_config(**kw):
    """config.json of a Qwen3-MoE model (Qwen3MoeConfig's keys and defaults where the test does not set them)."""
    c = qwen3_config(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", intermediate_size=6144,
                     num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=4, decoder_sparse_step=1,
                     moe_intermediate_size=768, num_experts_per_tok=8, num_experts=128, norm_topk_prob=False,
                     output_router_logits=False, router_aux_loss_coef=0.001, mlp_only_layers=[])
    c.update(kw)
    return c
