"""DBRX: full attention whose KV heads sit in a sub-config.

Source (transformers 5.25.0): models/dbrx/configuration_dbrx.py: DbrxAttentionConfig.kv_n_heads (default 1)
and DbrxConfig.__post_init__ `self.num_key_value_heads = self.attn_config.kv_n_heads` (a top-level
num_key_value_heads is overwritten); attribute_map n_heads, d_model, n_layers, max_seq_len.
models/dbrx/modeling_dbrx.py, DbrxAttention: head_dim = d_model // n_heads, KV heads attn_config.kv_n_heads.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from .generic import generic


def dbrx(c: ConfigReader) -> Built:
    attn = c.raw.get("attn_config")
    if attn is not None and not isinstance(attn, dict):
        raise ModelFactsError(f"{c.where}: config field 'attn_config' is {attn!r}, expected an object "
                              f"(model_type {c.model_type})")
    kv = (attn or {}).get("kv_n_heads")
    if kv is None:
        kv = 1
        c.defaults_used.append("attn_config.kv_n_heads=1")
    n_heads, h = c.req("num_attention_heads", "n_heads"), c.req("hidden_size", "d_model")
    if not n_heads:
        raise ModelFactsError(f"{c.where}: config field 'n_heads' is 0 (model_type {c.model_type})")
    raw = {k: v for k, v in c.raw.items() if k not in ("head_dim", "kv_channels", "layer_types", "sliding_window")}
    raw.update(num_key_value_heads=c._int("attn_config.kv_n_heads", kv), head_dim=h // n_heads)
    inner = ConfigReader(raw, c.where, c.model_type)
    built = generic(inner)
    c.defaults_used.extend(inner.defaults_used)
    notes = [n for n in built.notes if not n.startswith("rules: generic")]
    return Built(built.layers, built.params, notes)
