"""Nemotron-H: Mamba-2, attention, MLP and MoE blocks by hybrid_override_pattern."""
from __future__ import annotations

from ..common import ModelFactsError
from ..specs import MambaStateSpec
from ..config import ConfigReader, Built, LEGACY_LAYER_TYPES, kv_heads, attention_spec
from ..params import attn_params, mlp_params, embed_params


def nemotron_h(c: ConfigReader) -> Built:
    """configuration_nemotron_h: hybrid_override_pattern / layers_block_type: M = Mamba-2, * = attention,
    - = MLP, E = MoE (no cache); modeling_nemotron_h.NemotronHMamba2Mixer holds the state."""
    h = c.req("hidden_size")
    pattern = c.maybe("hybrid_override_pattern")
    types = c.maybe("layers_block_type") or c.maybe("layer_types")
    if types is None and pattern is not None:
        table = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
        bad = sorted(set(pattern) - set(table))
        if bad:
            raise ModelFactsError(f"{c.where}: config field 'hybrid_override_pattern' has unknown symbol(s) {bad}")
        types = [table[ch] for ch in pattern]
    if types is None:
        raise ModelFactsError(f"{c.where}: config field 'hybrid_override_pattern' is missing (model_type nemotron_h)")
    types = [LEGACY_LAYER_TYPES.get(t, t) for t in types]
    n_heads = c.opt("num_attention_heads", 32)
    n_kv, hd = kv_heads(c, n_heads, 8), c.opt("head_dim", 128)
    m_heads, m_head_dim = c.opt("mamba_num_heads", 128), c.opt("mamba_head_dim", 64)
    inter_m = m_heads * m_head_dim
    groups = c.opt("n_groups", 8, "mamba_n_groups")
    state = c.opt("ssm_state_size", 128)
    kernel = c.opt("conv_kernel", 4, "mamba_d_conv")
    mamba = (MambaStateSpec(inter_m + 2 * groups * state, kernel, (m_heads, m_head_dim, state), n_groups=groups,
                            ssm_state_size=state),)
    layers = [mamba if t == "linear_attention" else attention_spec(c, t, n_kv, hd, None, None) for t in types]
    conv_dim = inter_m + 2 * groups * state
    mamba_params = h * (2 * inter_m + 2 * groups * state + m_heads) + conv_dim * kernel + \
        (conv_dim if c.opt("use_conv_bias", True, "mamba_conv_bias") else 0) + 3 * m_heads + inter_m + inter_m * h
    bias = c.opt("attention_bias", False)
    inter = c.opt("intermediate_size", 21504)
    mlp_bias = c.opt("mlp_bias", False)
    params = embed_params(c, c.opt("vocab_size", 131072), h, False) + h
    for t in types:
        params += h  # one norm per block
        if t == "linear_attention":
            params += mamba_params
        elif t == "full_attention":
            params += attn_params(h, n_heads, n_kv, hd, bias, bias)
        elif t == "mlp":
            params += mlp_params(h, inter, gated=False, bias=mlp_bias)
        else:  # NemotronHMoE: router, up/down experts (no gate), shared experts, optional latent projections
            e = c.opt("n_routed_experts", 8)
            latent = c.maybe("moe_latent_size")
            width = latent or h
            params += e * h + e * 2 * c.opt("moe_intermediate_size", 7688) * width + \
                mlp_params(h, c.opt("moe_shared_expert_intermediate_size", 7688), gated=False, bias=mlp_bias)
            if latent:
                params += 2 * h * latent + ((latent + h) if mlp_bias else 0)
    return Built(layers, params)

