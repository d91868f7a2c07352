"""Llama 4 text model: chunked attention on RoPE layers, full on NoPE layers."""
from __future__ import annotations

from ..config import ConfigReader, Built, layer_types_from, kv_heads, attention_spec
from ..params import attn_params, mlp_params, experts_params, embed_params


def llama4_text(c: ConfigReader) -> Built:
    """configuration_llama4.Llama4TextConfig.__post_init__: layers with RoPE (no_rope_layers[i] == 1) are
    chunked, the NoPE layers (every no_rope_layer_interval-th) are full."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = kv_heads(c, n_heads, 8), c.opt("head_dim", 128)
    chunk = c.opt("attention_chunk_size", 8192)
    rope = c.maybe("no_rope_layers") or \
        [int((i + 1) % c.opt("no_rope_layer_interval", 4) != 0) for i in range(n_layers)]
    default = ["chunked_attention" if r and chunk is not None else "full_attention" for r in rope]
    types = layer_types_from(c, n_layers, default)
    layers = [attention_spec(c, t, n_kv, hd, None, chunk) for t in types]
    step = c.opt("interleave_moe_layer_step", 1)
    moe = c.maybe("moe_layers")
    moe = set(moe if moe is not None else range(step - 1, n_layers, step))
    e, inter = c.opt("num_local_experts", 16), c.req("intermediate_size")
    attn = attn_params(h, n_heads, n_kv, hd, c.opt("attention_bias", False), c.opt("attention_bias", False))
    params = embed_params(c, c.opt("vocab_size", 202048), h, False) + h
    for i in range(n_layers):
        params += attn + 2 * h
        if i in moe:
            params += h * e + experts_params(h, e, inter) + mlp_params(h, inter)  # router, experts, shared
        else:
            params += mlp_params(h, c.opt("intermediate_size_mlp", 16384))
    return Built(layers, params)

