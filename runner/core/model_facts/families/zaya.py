"""ZAYA: every layer attention plus compressed convolutional attention (CCA) states.

Sources (transformers 5.25.0): models/zaya/configuration_zaya.py: layer_types default all "hybrid";
"hybrid_sliding" layers need sliding_window; head_dim 128, num_key_value_heads 2, cca_time0 / cca_time1 2.
models/zaya/modeling_zaya.py: the attention caches K and V of num_key_value_heads x head_dim (a sliding window on
"hybrid_sliding" layers, cache_utils.LinearAttentionAndSlidingWindowAttentionLayer); its CCA keeps the conv
state of the concatenated queries and keys ((num_attention_heads + num_key_value_heads) x head_dim channels,
(cca_time0 - 1) + (cca_time1 - 1) columns) and, as its recurrent state, the last token's delayed value
(num_key_value_heads x head_dim / 2), both in the model dtype.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader, layer_types_from
from ..params import embed_params
from ..specs import FullAttentionSpec, LinearAttentionStateSpec, SlidingWindowSpec


def zaya(c: ConfigReader) -> Built:
    n_layers, h = c.opt("num_hidden_layers", 40), c.opt("hidden_size", 2048)
    heads, kv, hd = c.opt("num_attention_heads", 8), c.opt("num_key_value_heads", 2), c.opt("head_dim", 128)
    kernel = (c.opt("cca_time0", 2) - 1) + (c.opt("cca_time1", 2) - 1)
    cca = LinearAttentionStateSpec((heads + kv) * hd, kernel, (kv * hd // 2,), recurrent_dtype=None)
    layers = []
    for i, kind in enumerate(layer_types_from(c, n_layers, ["hybrid"] * n_layers)):
        if kind == "hybrid":
            layers.append((FullAttentionSpec(kv, hd), cca))
        elif kind == "hybrid_sliding":
            window = c.maybe("sliding_window")
            if not window:
                raise ModelFactsError(f"{c.where}: layer {i} is 'hybrid_sliding' but config field 'sliding_window' "
                                      f"is missing (model_type {c.model_type})")
            layers.append((SlidingWindowSpec(kv, hd, sliding_window=c._int("sliding_window", window)), cca))
        else:
            raise ModelFactsError(f"{c.where}: layer type {kind!r} (layer {i}) is not one ZAYA has "
                                  "(expected 'hybrid' or 'hybrid_sliding')")
    params = embed_params(c, c.opt("vocab_size", 262272), h, True)
    return Built(layers, params, ["weights: embeddings only (ZAYA's attention and MoE are not counted)"])
