"""Zamba and Zamba2: Mamba layers, with a shared attention block on the "hybrid" layers.

Sources (transformers 5.25.0):
- models/zamba/configuration_zamba.py: layers_block_type "mamba" / "hybrid" (attn_layer_period, offset);
  modeling_zamba.py: ZambaMambaMixer's conv state [mamba_expand x hidden_size, mamba_d_conv] and SSM state
  [intermediate, mamba_d_state] created in the input dtype (`ssm_state = torch.zeros(batch, intermediate_size,
  ..., dtype=input_dtype)`); ZambaAttention caches num_key_value_heads x head_dim (attribute_map head_dim ->
  attention_head_dim).
- models/zamba2/modeling_zamba2.py: Zamba2MambaMixer is Mamba-2: conv_dim = intermediate + 2 x mamba_ngroups x
  mamba_d_state over mamba_d_conv taps, SSM state [n_mamba_heads, mamba_headdim, mamba_d_state] (kept in float32
  as the Mamba-2 chunk scan of Nemotron-H does: the float32 census cannot tell); Zamba2Attention as Zamba's.
"""
from __future__ import annotations

from ..config import Built, ConfigReader, hybrid_layer_types, kv_heads
from ..params import attn_params, embed_params, mlp_params
from ..specs import FullAttentionSpec, MambaStateSpec


def zamba(c: ConfigReader) -> Built:
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = kv_heads(c, n_heads, n_heads)
    hd = c.maybe("attention_head_dim") or c.maybe("head_dim") or h // n_heads
    hd = c._int("attention_head_dim", hd)
    state, kernel, expand = c.opt("mamba_d_state", 16), c.opt("mamba_d_conv", 4), c.opt("mamba_expand", 2)
    inter = int(expand * h)
    if mt == "zamba2":
        groups, heads = c.opt("mamba_ngroups", 1), c.opt("n_mamba_heads", 8)
        head_dim = c.opt("mamba_headdim", 64)
        mamba = MambaStateSpec(inter + 2 * groups * state, kernel, (heads, head_dim, state), n_groups=groups,
                               ssm_state_size=state)
    else:
        mamba = MambaStateSpec(inter, kernel, (inter, state), recurrent_dtype=None)
    types = c.maybe("layers_block_type") or c.maybe("layer_types")
    types = hybrid_layer_types(c, types, "layers_block_type", n_layers, {"linear_attention", "hybrid"})
    attention = FullAttentionSpec(n_kv, hd)
    layers = [(attention, mamba) if t == "hybrid" else (mamba,) for t in types]
    params = embed_params(c, c.req("vocab_size"), h, True) + h + \
        attn_params(2 * h, n_heads, n_kv, hd) + mlp_params(h, c.req("intermediate_size"))  # the shared block
    return Built(layers, params, ["weights: the shared attention block once, the Mamba mixers not (analytic)"])
