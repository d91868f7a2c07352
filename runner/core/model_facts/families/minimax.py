"""MiniMax (MiniMax-Text-01): lightning (linear) attention layers between full-attention layers.

Source: transformers 5.25.0 models/minimax/modeling_minimax.py: MiniMaxCache is a DynamicCache built without
the config, so its attention layers are plain DynamicLayers holding every token even where the config has a
sliding_window; MiniMaxLightningAttention keeps per layer one state `attn_weights_inter` of
[batch, num_attention_heads, head_dim, head_dim] in the model dtype (`torch.zeros(..., dtype=value_states.dtype)`,
cache.set_linear_cache). configuration_minimax.py: layer_types, default full at even
indices and linear at odd ones (__post_init__), head_dim default hidden_size / num_attention_heads.
"""
from __future__ import annotations

from ..config import Built, ConfigReader, kv_heads, layer_types_from
from ..params import attn_params, embed_params, experts_params
from ..specs import FullAttentionSpec, LinearAttentionStateSpec


def minimax(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = kv_heads(c, n_heads, 8)
    hd = c.maybe("head_dim") or h // n_heads
    hd = c._int("head_dim", hd)
    types = layer_types_from(c, n_layers, ["full_attention" if (i + 1) % 2 else "linear_attention"
                                           for i in range(n_layers)])
    linear = (LinearAttentionStateSpec(0, 0, (n_heads, hd, hd), recurrent_dtype=None),)
    layers = [linear if t == "linear_attention" else (FullAttentionSpec(n_kv, hd),) for t in types]
    e, inter = c.opt("num_local_experts", 8), c.req("intermediate_size")
    params = embed_params(c, c.req("vocab_size"), h, False) + h + \
        n_layers * (attn_params(h, n_heads, n_kv, hd) + 2 * h + h * e + experts_params(h, e, inter))
    return Built(layers, params, ["weights: linear-attention layers counted as attention (analytic)"])
