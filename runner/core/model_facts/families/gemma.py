"""Gemma 3 and Gemma 4 text models: sliding and full layers by pattern, Gemma 4's global heads and KV
sharing."""
from __future__ import annotations

from ..config import ConfigReader, Built, layer_types_from, attention_spec
from ..params import attn_params, mlp_params, experts_params, embed_params


def gemma3_text(c: ConfigReader) -> Built:
    """configuration_gemma3.Gemma3TextConfig.__post_init__: 5 sliding : 1 full by sliding_window_pattern."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 256)
    window = c.opt("sliding_window", 4096)
    if c.opt("use_bidirectional_attention", False):
        window = window // 2 + 1
    pattern = c.opt("sliding_window_pattern", 6)
    default = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    types = layer_types_from(c, n_layers, default)
    layers = [attention_spec(c, t, n_kv, hd, window, None) for t in types]
    attn = attn_params(h, n_heads, n_kv, hd, c.opt("attention_bias", False), c.opt("attention_bias", False))
    per_layer = attn + 2 * hd + 4 * h + mlp_params(h, c.req("intermediate_size"))
    params = embed_params(c, c.opt("vocab_size", 262_208), h, True) + n_layers * per_layer + h
    return Built(layers, params)


def gemma4_text(c: ConfigReader) -> Built:
    """configuration_gemma4.Gemma4TextConfig: 5 sliding : 1 full (the last layer always full); full layers take
    global_head_dim and, with attention_k_eq_v, num_global_key_value_heads (per_layer_config); the last
    num_kv_shared_layers reuse an earlier layer's cache and hold none (kv_sharing_modes "reuse" -> DummyLayer).
    With attention_k_eq_v a full layer has no v_proj, but its cache still keeps V beside K
    (modeling_gemma4.Gemma4TextAttention.forward: value_states = key_states, then cache.update)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 256)
    window = c.opt("sliding_window", 512)
    if c.maybe("use_bidirectional_attention") == "all":
        window = window // 2 + 1
    default = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
    types = list(layer_types_from(c, n_layers, default))
    types[-1] = "full_attention"  # __post_init__ forces the last layer to full attention
    k_eq_v = bool(c.opt("attention_k_eq_v", False))
    global_hd = c.opt("global_head_dim", 512)
    global_kv = c.maybe("num_global_key_value_heads") if k_eq_v else None
    global_kv = int(global_kv) if global_kv else n_kv
    # Gemma4TextConfig.__post_init__ (configuration_gemma4.py, transformers 5.24) turns global_head_dim and
    # num_global_key_value_heads into per_layer_config overrides of the full layers, and save_pretrained writes
    # those ({"5": {"head_dim": 48}}) instead: a config that has per_layer_config is read from it alone.
    per_layer = c.maybe("per_layer_config")
    shared = c.opt("num_kv_shared_layers", 0)
    first_shared = n_layers - shared
    bias = c.opt("attention_bias", False)
    inter, per_layer_in = c.req("intermediate_size"), c.opt("hidden_size_per_layer_input", 256)
    moe = bool(c.opt("enable_moe_block", False))
    layers, params = [], 0
    for i, t in enumerate(types):
        full = t == "full_attention"
        head_dim, kv = (global_hd, global_kv) if full else (hd, n_kv)
        if per_layer is not None:  # as saved by 5.24: overrides per layer, global_head_dim not read
            over = per_layer.get(str(i)) or {}
            head_dim = c._int("head_dim", over["head_dim"]) if over.get("head_dim") is not None else hd
            kv = c._int("num_key_value_heads", over["num_key_value_heads"]) \
                if over.get("num_key_value_heads") is not None else n_kv
        reuse = i >= first_shared
        layers.append(() if reuse else attention_spec(c, t, kv, head_dim, window, None))
        params += h * n_heads * head_dim + head_dim + n_heads * head_dim * h + ((n_heads * head_dim + h) if bias else 0)
        if not reuse:  # k_norm, k_proj and (unless K doubles as V) v_proj
            n_proj = 1 if (k_eq_v and full) else 2
            params += head_dim + n_proj * (h * kv * head_dim + (kv * head_dim if bias else 0))
        wide = 2 if (c.opt("use_double_wide_mlp", False) and reuse) else 1
        params += 4 * h + mlp_params(h, inter * wide)
        if per_layer_in:
            params += 2 * h * per_layer_in + h
        if moe:
            e, moe_inter = c.req("num_experts"), c.req("moe_intermediate_size")
            params += h * e + h + e + experts_params(h, e, moe_inter) + 3 * h
    vocab = c.opt("vocab_size", 262_144)
    params += embed_params(c, vocab, h, True) + h
    if per_layer_in:
        params += c.opt("vocab_size_per_layer_input", 262_144) * n_layers * per_layer_in + \
            h * n_layers * per_layer_in + per_layer_in
    return Built(layers, params)

