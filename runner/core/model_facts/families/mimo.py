"""MiMo-V2-Flash: sliding layers with twice the KV heads and V with its own head dim."""
from __future__ import annotations

from ..config import ConfigReader, Built, layer_types_from, attention_spec
from ..params import mlp_params, experts_params, embed_params


def mimo_v2_flash(c: ConfigReader) -> Built:
    """configuration_mimo_v2_flash: full attention at layer 0 and every 6th, sliding elsewhere with a window of
    sliding_window_size + 1; modeling_mimo_v2_flash.MiMoV2FlashAttention gives sliding layers twice the KV heads,
    and V its own head dim (v_head_dim)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd, v_hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 192), c.opt("v_head_dim", 128)
    window = c.maybe("sliding_window_size")
    window = int(window) + 1 if window is not None else c.opt("sliding_window", 129)
    default = ["full_attention" if i == 0 or not (i + 1) % 6 else "sliding_attention" for i in range(n_layers)]
    types = layer_types_from(c, n_layers, default)
    mlp_types = c.maybe("mlp_layer_types") or ["dense"] + ["sparse"] * (n_layers - 1)
    bias = c.opt("attention_bias", False)
    e, moe_inter, inter = c.opt("n_routed_experts", 256), c.opt("moe_intermediate_size", 2048), \
        c.req("intermediate_size")
    layers, params = [], embed_params(c, c.opt("vocab_size", 152576), h, False) + h
    for t, mlp in zip(types, mlp_types):
        swa = t == "sliding_attention"
        kv = 2 * n_kv if swa else n_kv
        layers.append(attention_spec(c, t, kv, hd, window, None, head_dim_v=v_hd))
        params += h * n_heads * hd + h * kv * (hd + v_hd) + n_heads * v_hd * h + \
            ((n_heads * hd + kv * (hd + v_hd)) if bias else 0) + (n_heads if swa else 0) + 2 * h
        params += h * e + experts_params(h, e, moe_inter) if mlp == "sparse" else mlp_params(h, inter)
    return Built(layers, params)

