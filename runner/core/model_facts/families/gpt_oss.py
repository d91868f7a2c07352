"""gpt-oss: alternating sliding and full layers."""
from __future__ import annotations

from ..config import ConfigReader, Built, layer_types_from, kv_heads, attention_spec
from ..params import attn_params, embed_params


def gpt_oss(c: ConfigReader) -> Built:
    """configuration_gpt_oss.GptOssConfig.__post_init__: sliding and full layers alternate."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = kv_heads(c, n_heads, 8), c.opt("head_dim", 64)
    window = c.opt("sliding_window", 128)
    default = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    types = layer_types_from(c, n_layers, default)
    layers = [attention_spec(c, t, n_kv, hd, window, None) for t in types]
    bias = c.opt("attention_bias", True)
    e, inter = c.opt("num_local_experts", 128, "num_experts"), c.req("intermediate_size")
    experts = e * (h * 2 * inter + 2 * inter + inter * h + h)  # gate_up and down, with biases
    per_layer = attn_params(h, n_heads, n_kv, hd, bias, bias) + n_heads + 2 * h + (h * e + e) + experts
    params = embed_params(c, c.req("vocab_size"), h, False) + n_layers * per_layer + h
    return Built(layers, params)

