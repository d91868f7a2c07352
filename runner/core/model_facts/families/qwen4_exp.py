"""Qwen4-Exp: gated delta-net layers and indexed (QSA) full-attention layers.

Source (transformers 5.25.0): models/qwen4_exp/modeling_qwen4_exp.py: the indexer caches one key of
indexer_head_dim per token (`cache.update_indexer(raw_keys, ...)`, indexer_kv_heads is 1), and the model keeps
the 3-D position ids every indexer shares on the first indexed layer (`indexer_position_ids`, int64, 3 rows).
The attention and delta-net caches are the generic reading's, with indexer_head_dim as its index_head_dim.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from ..specs import PositionHistorySpec
from .generic import generic


def qwen4_exp_text(c: ConfigReader) -> Built:
    raw = dict(c.raw)
    if raw.get("index_head_dim") is None and raw.get("indexer_head_dim") is not None:
        raw["index_head_dim"] = raw["indexer_head_dim"]
    types = raw.get("layer_types")
    if isinstance(types, list):  # transformers 5.17 configuration_qwen4_exp.py names it "qwen_sparse_attention"
        raw["layer_types"] = ["indexed_attention" if t == "qwen_sparse_attention" else t for t in types]
    inner = ConfigReader(raw, c.where, c.model_type)
    built = generic(inner)
    c.defaults_used.extend(inner.defaults_used)
    layers = list(built.layers)
    types = raw.get("layer_types")
    if isinstance(types, list) and "indexed_attention" in types:
        first = types.index("indexed_attention")
        layers[first] = (*layers[first], PositionHistorySpec(3))
    notes = [n for n in built.notes if not n.startswith("rules: generic")]
    return Built(layers, built.params, notes)
