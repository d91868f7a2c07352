"""Kolibri 1.1: sliding-window layers and sparse (indexed) full-attention layers, some sharing K/V.

Sources (transformers 5.25.0): models/kolibri1_1/configuration_kolibri1_1.py, Kolibri1_1Config: layer_types
default "indexed_attention" at every 5th layer, else "sliding_attention" (sliding_window 513); kv_source_layers
default maps the indexed layers onto earlier ones by (0, 0, 0, 3, 4, 5, 5, 5, 5, 0); kv_sharing_modes: a layer
whose source is another layer "reuse"s it. models/kolibri1_1/modeling_kolibri1_1.py, Kolibri1_1Attention: a
"reuse" layer caches nothing; every other layer caches K and V of num_key_value_heads x head_dim (sliding
layers a window); the indexer scores the cached keys themselves and keeps no cache of its own.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader, layer_types_from
from ..params import embed_params
from ..specs import FullAttentionSpec, LayerCache, SlidingWindowSpec

DEFAULT_SOURCES = (0, 0, 0, 3, 4, 5, 5, 5, 5, 0)


def kolibri(c: ConfigReader) -> Built:
    n_layers, h = c.req("num_hidden_layers"), c.req("hidden_size")
    kv, hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 128)
    types = layer_types_from(c, n_layers, ["indexed_attention" if (i + 1) % 5 == 0 else "sliding_attention"
                                           for i in range(n_layers)])
    indexed = [i for i, t in enumerate(types) if t == "indexed_attention"]
    sources = c.raw.get("kv_source_layers")
    if sources is None:
        if len(indexed) > len(DEFAULT_SOURCES):
            raise ModelFactsError(f"{c.where}: {len(indexed)} indexed-attention layers need config field "
                                  f"'kv_source_layers' (model_type {c.model_type})")
        sources = list(range(n_layers))
        for layer, source in zip(indexed, DEFAULT_SOURCES):
            sources[layer] = indexed[source]
    if not isinstance(sources, list) or len(sources) != n_layers:
        raise ModelFactsError(f"{c.where}: config field 'kv_source_layers' must list {n_layers} layers "
                              f"(model_type {c.model_type})")
    window = c.opt("sliding_window", 513)
    layers: list[LayerCache] = []
    for i, kind in enumerate(types):
        if sources[i] != i:
            layers.append(())  # reuses another layer's K/V
        elif kind == "sliding_attention":
            layers.append((SlidingWindowSpec(kv, hd, sliding_window=window),))
        elif kind == "indexed_attention":
            layers.append((FullAttentionSpec(kv, hd),))
        else:
            raise ModelFactsError(f"{c.where}: layer type {kind!r} (layer {i}) is not one Kolibri 1.1 has")
    params = embed_params(c, c.req("vocab_size"), h, False)
    return Built(layers, params, ["weights: embeddings only (Kolibri's attention and MoE are not counted)"])
