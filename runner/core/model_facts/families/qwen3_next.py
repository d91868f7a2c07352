"""Qwen3-Next and Qwen3.5: gated delta-net layers between full-attention layers."""
from __future__ import annotations

from ..specs import LinearAttentionStateSpec
from ..config import ConfigReader, Built, layer_types_from, attention_spec
from ..params import attn_params, mlp_params, experts_params, embed_params


def qwen3_next(c: ConfigReader) -> Built:
    """configuration_qwen3_next (and qwen3_5, qwen3_5_moe): a full-attention layer every full_attention_interval
    (4), gated delta-net layers between (modeling_qwen3_next.Qwen3NextGatedDeltaNet; Qwen3_5GatedDeltaNet holds
    the same states). MLPs: Qwen3-Next MoE by decoder_sparse_step, Qwen3.5 dense, Qwen3.5-MoE MoE everywhere."""
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4 if mt == "qwen3_5_text" else 2), c.opt("head_dim", 256)
    interval = c.opt("full_attention_interval", 4)
    default = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n_layers)]
    types = layer_types_from(c, n_layers, default)
    k_heads, v_heads = c.opt("linear_num_key_heads", 16), c.opt("linear_num_value_heads", 32)
    k_dim, v_dim = c.opt("linear_key_head_dim", 128), c.opt("linear_value_head_dim", 128)
    kernel = c.opt("linear_conv_kernel_dim", 4)
    key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
    conv_dim = 2 * key_dim + value_dim
    linear = (LinearAttentionStateSpec(conv_dim, kernel, (v_heads, k_dim, v_dim)),)
    layers = [linear if t == "linear_attention" else attention_spec(c, t, n_kv, hd, None, None) for t in types]
    bias = c.opt("attention_bias", False)
    full_attn = attn_params(h, n_heads, n_kv, hd, bias, bias, q_factor=2) + 2 * hd  # gated q, q/k norms
    lin_attn = h * (2 * key_dim + 2 * value_dim) + h * 2 * v_heads + conv_dim * kernel + 2 * v_heads + v_dim + \
        value_dim * h
    e = 0 if mt == "qwen3_5_text" else c.opt("num_experts", 512 if mt == "qwen3_next" else 256)
    mlp_only = (c.opt("mlp_only_layers", []) or []) if mt == "qwen3_next" else []
    step = c.opt("decoder_sparse_step", 1) if mt == "qwen3_next" else 1
    vocab = c.req("vocab_size") if mt == "qwen3_next" else c.opt("vocab_size", 248320)
    params = embed_params(c, vocab, h, False) + h
    for i, t in enumerate(types):
        params += (lin_attn if t == "linear_attention" else full_attn) + 2 * h
        if i not in mlp_only and e > 0 and (i + 1) % step == 0:
            params += h * e + experts_params(h, e, c.opt("moe_intermediate_size", 512)) + \
                mlp_params(h, c.opt("shared_expert_intermediate_size", 512)) + h  # + shared_expert_gate
        else:
            params += mlp_params(h, c.req("intermediate_size"))
    return Built(layers, params)

