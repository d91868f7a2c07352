"""Falcon: multi-query, or K/V broadcast to every head with new_decoder_architecture."""
from __future__ import annotations

from ..specs import FullAttentionSpec
from ..config import ConfigReader, Built
from ..params import embed_params


def falcon(c: ConfigReader) -> Built:
    """modeling_falcon.FalconAttention: multi_query caches one K/V head; new_decoder_architecture caches K/V
    broadcast to every query head (forward: num_kv_heads = self.num_heads if new_decoder_architecture)."""
    n_layers, n_heads, h = c.req("num_hidden_layers", "n_layer"), c.req("num_attention_heads", "n_head"), \
        c.req("hidden_size", "n_embed")
    hd = h // n_heads
    new_arch = bool(c.opt("new_decoder_architecture", False))
    multi_query = bool(c.opt("multi_query", True))
    n_kv_cfg = c.opt("num_kv_heads", n_heads)
    if new_arch:
        spec = FullAttentionSpec(n_heads, hd, engine_kv_heads=n_kv_cfg)
        qkv_out = (n_kv_cfg * 2 + n_heads) * hd
    elif multi_query:
        spec, qkv_out = FullAttentionSpec(1, hd), h + 2 * hd
    else:
        spec, qkv_out = FullAttentionSpec(n_heads, hd), 3 * h
    bias = bool(c.opt("bias", False))
    ffn = c.opt("ffn_hidden_size", 4 * h)
    n_ln = c.opt("num_ln_in_parallel_attn", 2 if new_arch else 1) if new_arch else \
        (1 if c.opt("parallel_attn", True) else 2)
    per_layer = (h * qkv_out + (qkv_out if bias else 0)) + (h * h + (h if bias else 0)) + \
        (h * ffn + (ffn if bias else 0)) + (ffn * h + (h if bias else 0)) + n_ln * 2 * h
    params = embed_params(c, c.req("vocab_size"), h, True) + n_layers * per_layer + 2 * h
    return Built([(spec,)] * n_layers, params)

