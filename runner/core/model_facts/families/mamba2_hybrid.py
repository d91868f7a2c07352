"""Mamba-2 + attention hybrids read from the `mamba_*` fields: Falcon-H1 (attention and Mamba-2 side by side in
every layer), Bamba and Granite-4.0 hybrid (GraniteMoeHybrid: a Mamba-2 or an attention block per layer).

Sources (transformers 5.25.0, the same fields in 5.17):
- models/falcon_h1/modeling_falcon_h1.py, FalconH1Mixer.__init__: intermediate = mamba_d_ssm, or mamba_expand x
  hidden_size where it is null; conv_dim = intermediate + 2 x mamba_n_groups x mamba_d_state over mamba_d_conv
  taps; SSM state [mamba_n_heads, mamba_d_head, mamba_d_state]; FalconH1DecoderLayer runs attention and the
  mixer on every layer (configuration_falcon_h1.py: mamba_d_head "auto" = intermediate / mamba_n_heads).
- models/bamba/modeling_bamba.py, BambaMixer (the same state with intermediate = mamba_expand x hidden_size);
  configuration_bamba.py: attention at attn_layer_indices, Mamba-2 elsewhere (layers_block_type).
- models/granitemoehybrid/modeling_granitemoehybrid.py, GraniteMoeHybridMambaLayer (the same state);
  configuration_granitemoehybrid.py: layer_types of "mamba" / "attention" (or their new names).
The SSM state is float32 and the conv state in the model dtype, as for Mamba-2 (see specs.py).
"""
from __future__ import annotations

from ..config import Built, ConfigReader, hybrid_layer_types, kv_heads
from ..params import attn_params, embed_params, mlp_params
from ..specs import FullAttentionSpec, LayerCache, MambaStateSpec


def _mamba2_state(c: ConfigReader, h: int, d_ssm: bool) -> MambaStateSpec:
    heads, groups = c.opt("mamba_n_heads", 128), c.opt("mamba_n_groups", 1)
    state, kernel, expand = c.opt("mamba_d_state", 256), c.opt("mamba_d_conv", 4), c.opt("mamba_expand", 2)
    inter = c.maybe("mamba_d_ssm") if d_ssm else None
    inter = c._int("mamba_d_ssm", inter) if inter is not None else int(expand * h)
    head_dim = c.opt("mamba_d_head", "auto")
    head_dim = inter // heads if head_dim == "auto" else c._int("mamba_d_head", head_dim)
    conv_dim = inter + 2 * groups * state
    return MambaStateSpec(conv_dim, kernel, (heads, head_dim, state), n_groups=groups, ssm_state_size=state)


def mamba2_hybrid(c: ConfigReader) -> Built:
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = kv_heads(c, n_heads, 8)
    hd = c.maybe("head_dim") or h // n_heads
    hd = c._int("head_dim", hd)
    mamba = _mamba2_state(c, h, d_ssm=mt == "falcon_h1")
    attention = FullAttentionSpec(n_kv, hd)
    layers: list[LayerCache]
    if mt == "falcon_h1":
        layers = [(attention, mamba)] * n_layers
    else:
        types = c.maybe("layers_block_type") or c.maybe("layer_types")
        if types is None and mt == "bamba":
            indices = c.maybe("attn_layer_indices") or []
            types = ["attention" if i in indices else "mamba" for i in range(n_layers)]
        types = hybrid_layer_types(c, types, "layer_types", n_layers, {"linear_attention", "full_attention"})
        layers = [(mamba,) if t == "linear_attention" else (attention,) for t in types]
    inter = c.opt("intermediate_size", 4 * h) if not isinstance(c.raw.get("intermediate_size"), list) else 4 * h
    params = embed_params(c, c.req("vocab_size"), h, False) + h + \
        n_layers * (attn_params(h, n_heads, n_kv, hd) + 2 * h + mlp_params(h, inter))
    return Built(layers, params, ["weights: attention and MLP counted per layer, the Mamba mixers not (analytic)"])
