"""Kimi-Linear and Ling/Ring hybrids: Kimi Delta Attention (KDA) layers between MLA layers.

Sources (transformers 5.25.0): models/kimi_linear/configuration_kimi_linear.py, KimiLinearConfig.__post_init__:
a checkpoint keeps the KDA fields in `linear_attn_config` (head_dim, num_heads, short_conv_kernel_size) and the
layer kinds as 1-indexed `full_attn_layers` / `kda_layers`; without them a full layer sits at every index
i > 0 with i % 4 == 0. models/bailing_hybrid/configuration_bailing_hybrid.py, BailingHybridConfig.__post_init__:
linear_head_dim = head_dim, linear_num_heads = num_attention_heads, kernel short_conv_kernel_size, a full layer
closing every layer_group_size (6) layers. The caches themselves (MLA latent, KDA conv and recurrent states)
are the generic reading's (generic._mla, generic._kimi_delta_state).
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from .generic import generic


def _kimi_fields(raw: dict) -> dict:
    lac: dict = raw["linear_attn_config"] if isinstance(raw.get("linear_attn_config"), dict) else {}
    out = {"linear_head_dim": lac.get("head_dim", raw.get("linear_head_dim", 128)),
           "linear_num_heads": lac.get("num_heads", raw.get("linear_num_heads", 32)),
           "linear_conv_kernel_dim": lac.get("short_conv_kernel_size", raw.get("linear_conv_kernel_dim", 4))}
    n = raw.get("num_hidden_layers")
    if raw.get("layer_types") is None and isinstance(n, int):
        if "full_attn_layers" in lac and "kda_layers" in lac:
            types: list = [None] * n
            for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
                for layer in lac[key]:
                    if isinstance(layer, int) and 1 <= layer <= n:
                        types[layer - 1] = kind
            out["layer_types"] = types  # a layer listed in neither is refused by the layer-type check
        else:
            out["layer_types"] = ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)]
    return out


def _bailing_fields(raw: dict) -> dict:
    out = {"linear_head_dim": raw.get("linear_head_dim", raw.get("head_dim", 128)),
           "linear_num_heads": raw.get("linear_num_heads", raw.get("num_attention_heads")),
           "linear_conv_kernel_dim": raw.get("linear_conv_kernel_dim", raw.get("short_conv_kernel_size", 4))}
    n, group = raw.get("num_hidden_layers"), raw.get("layer_group_size", 6)
    if raw.get("layer_types") is None and isinstance(n, int) and isinstance(group, int) and group > 0:
        out["layer_types"] = ["full_attention" if (i + 1) % group == 0 else "linear_attention" for i in range(n)]
    return out


def kimi_delta_hybrid(c: ConfigReader) -> Built:
    fields = _kimi_fields(c.raw) if c.model_type == "kimi_linear" else _bailing_fields(c.raw)
    raw = {**c.raw, **{k: v for k, v in fields.items() if v is not None}}
    inner = ConfigReader(raw, c.where, c.model_type)
    built = generic(inner)
    c.defaults_used.extend(inner.defaults_used)
    notes = [n for n in built.notes if not n.startswith("rules: generic")]
    return Built(built.layers, built.params, notes, mla_per_head=built.mla_per_head)
