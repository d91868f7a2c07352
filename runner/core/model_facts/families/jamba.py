"""Jamba: Mamba-1 layers with an attention layer every attn_layer_period."""
from __future__ import annotations

import math

from ..specs import FullAttentionSpec, MambaStateSpec
from ..config import ConfigReader, Built, kv_heads
from ..params import attn_params, mlp_params, experts_params, embed_params


def jamba(c: ConfigReader) -> Built:
    """configuration_jamba.JambaConfig.layers_block_type: attention where i % attn_layer_period ==
    attn_layer_offset, Mamba-1 elsewhere (modeling_jamba.JambaMambaMixer)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = kv_heads(c, n_heads, 8)
    hd = c.maybe("head_dim") or h // n_heads
    period, offset = c.opt("attn_layer_period", 8), c.opt("attn_layer_offset", 4)
    d_state, d_conv, expand = c.opt("mamba_d_state", 16), c.opt("mamba_d_conv", 4), c.opt("mamba_expand", 2)
    inter_m = expand * h
    dt_rank = c.opt("mamba_dt_rank", "auto")
    dt_rank = math.ceil(h / 16) if dt_rank == "auto" else int(dt_rank)
    mamba = (MambaStateSpec(inter_m, d_conv, (inter_m, d_state)),)
    attn_layers = {i for i in range(n_layers) if i % period == offset}
    layers = [(FullAttentionSpec(n_kv, hd),) if i in attn_layers else mamba for i in range(n_layers)]
    conv_bias, proj_bias = c.opt("mamba_conv_bias", True), c.opt("mamba_proj_bias", False)
    mamba_params = h * 2 * inter_m + (2 * inter_m if proj_bias else 0) + inter_m * d_conv + \
        (inter_m if conv_bias else 0) + inter_m * (dt_rank + 2 * d_state) + dt_rank * inter_m + inter_m + \
        inter_m * d_state + inter_m + inter_m * h + (h if proj_bias else 0) + dt_rank + 2 * d_state
    e_period, e_offset = c.opt("expert_layer_period", 2), c.opt("expert_layer_offset", 1)
    e, inter = c.opt("num_experts", 16), c.req("intermediate_size")
    params = embed_params(c, c.opt("vocab_size", 65536), h, False) + h
    for i in range(n_layers):
        params += (attn_params(h, n_heads, n_kv, hd) if i in attn_layers else mamba_params) + 2 * h
        params += h * e + experts_params(h, e, inter) if (i % e_period == e_offset and e > 1) \
            else mlp_params(h, inter)
    return Built(layers, params)

