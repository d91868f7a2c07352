"""llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, minimax_m2: GQA attention with the
family's own defaults and sliding-window switches."""
from __future__ import annotations

from ..config import ConfigReader, Built, layer_types_from, kv_heads, generic_layer_types, attention_spec
from ..params import attn_params, mlp_params, experts_params, embed_params


def llama_like(c: ConfigReader) -> Built:
    """llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, minimax_m2: GQA with an optional explicit
    head_dim; sliding windows per each config class's rules (models/<family>/configuration_<family>.py,
    __post_init__)."""
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = kv_heads(c, n_heads, {"mistral": 8, "qwen2": 32, "qwen3": 32, "qwen3_moe": 4, "mixtral": 8,
                                  "minimax_m2": 8}.get(mt, n_heads))
    head_dim = c.opt("head_dim", 128) if mt in ("qwen3", "minimax_m2") else (c.maybe("head_dim") or h // n_heads)
    if mt in ("qwen2", "qwen3", "qwen3_moe"):  # sliding_window only counts with use_sliding_window
        window = c.opt("sliding_window", 4096) if c.opt("use_sliding_window", False) else None
    elif mt == "mistral":
        window = c.opt("sliding_window", 4096)
    else:
        window = c.maybe("sliding_window")
    chunk = c.maybe("attention_chunk_size")
    if mt in ("qwen2", "qwen3"):
        max_window = c.opt("max_window_layers", 28)
        default = ["sliding_attention" if window is not None and i >= max_window else "full_attention"
                   for i in range(n_layers)]
    else:
        default = generic_layer_types(n_layers, window, chunk)
    types = layer_types_from(c, n_layers, default)
    layers = [attention_spec(c, t, n_kv, head_dim, window, chunk) for t in types]

    vocab = c.req("vocab_size")
    qkv_bias = mt == "qwen2" or (mt in ("llama", "qwen3", "qwen3_moe") and c.opt("attention_bias", False))
    o_bias = mt in ("llama", "qwen3", "qwen3_moe") and c.opt("attention_bias", False)
    attn = attn_params(h, n_heads, n_kv, head_dim, qkv_bias, o_bias)
    if mt in ("qwen3", "qwen3_moe"):
        attn += 2 * head_dim  # q_norm, k_norm
    elif mt == "minimax_m2":
        attn += (n_heads + n_kv) * head_dim  # q_norm and k_norm over all heads
    params = embed_params(c, vocab, h, False) + h  # + final norm
    inter = c.req("intermediate_size")
    mlp_bias = mt == "llama" and c.opt("mlp_bias", False)
    for i in range(n_layers):
        params += attn + 2 * h
        if mt == "qwen3_moe" and i not in (c.opt("mlp_only_layers", []) or []) and c.opt("num_experts", 128) > 0 \
                and (i + 1) % c.opt("decoder_sparse_step", 1) == 0:
            e = c.opt("num_experts", 128)
            params += h * e + experts_params(h, e, c.opt("moe_intermediate_size", 768))
        elif mt in ("mixtral", "minimax_m2"):  # every layer MoE: router and experts, no shared expert
            e = c.opt("num_local_experts", 8 if mt == "mixtral" else 256)
            params += h * e + experts_params(h, e, inter)
        else:
            params += mlp_params(h, inter, bias=mlp_bias)
    return Built(layers, params)

