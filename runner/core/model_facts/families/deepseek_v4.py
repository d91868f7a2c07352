"""DeepSeek-V4: sliding-window attention with compressed long-range KV (CSA and HCA layers).

Sources (transformers 5.25.0): models/deepseek_v4/configuration_deepseek_v4.py, DeepseekV4Config.__post_init__:
layer_types, else the legacy per-layer `compress_ratios` (0 sliding, 4 CSA, 128 HCA), else two HCA layers and
then CSA and HCA alternating; compress_rates, default {CSA: 4, HCA: 128}, the legacy compress_rate_csa /
compress_rate_hca folded in; head_dim 512, sliding_window 128, index_head_dim 128.
models/deepseek_v4/modeling_deepseek_v4.py: every layer caches one K=V head of head_dim
(DeepseekV4Attention, `cache.update(kv, kv)`); a sliding_attention layer in a DynamicSlidingWindowLayer (keys
and values apart), CSA and HCA layers in DeepseekV4CSACache / DeepseekV4HCACache (specs.CompressedAttentionSpec).
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from ..params import embed_params
from ..specs import CompressedAttentionSpec, LayerCache, SlidingWindowSpec

RATIO_TYPES = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _layer_types(c: ConfigReader, n_layers: int) -> list[str]:
    types = c.raw.get("layer_types")
    ratios = c.raw.get("compress_ratios")
    if types is None and isinstance(ratios, list):
        unknown = [r for r in ratios if r not in RATIO_TYPES]
        if unknown:
            raise ModelFactsError(f"{c.where}: config field 'compress_ratios' holds {unknown[0]!r}, expected one "
                                  f"of 0, 4, 128 (model_type {c.model_type})")
        types = [RATIO_TYPES[r] for r in ratios]
    if types is None:
        types = ["heavily_compressed_attention"] * min(n_layers, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
            for i in range(max(n_layers - 2, 0))]
    if not isinstance(types, list) or len(types) < n_layers:
        raise ModelFactsError(f"{c.where}: config field 'layer_types' must list {n_layers} layers "
                              f"(model_type {c.model_type})")
    return list(types[:n_layers])


def deepseek_v4(c: ConfigReader) -> Built:
    n_layers, h = c.req("num_hidden_layers"), c.req("hidden_size")
    hd, window = c.opt("head_dim", 512), c.opt("sliding_window", 128)
    index_dim = c.opt("index_head_dim", 128)
    rates = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    given = c.raw.get("compress_rates")
    if isinstance(given, dict):
        rates.update({k: c._int(f"compress_rates.{k}", v) for k, v in given.items() if k in rates})
    for key, kind in (("compress_rate_csa", "compressed_sparse_attention"),
                      ("compress_rate_hca", "heavily_compressed_attention")):
        if c.raw.get(key) is not None:
            rates[kind] = c._int(key, c.raw[key])
    if min(rates.values()) < 1 or window < 1:
        raise ModelFactsError(f"{c.where}: compress rates and sliding_window must be positive "
                              f"(model_type {c.model_type})")
    layers: list[LayerCache] = []
    for i, kind in enumerate(_layer_types(c, n_layers)):
        if kind == "sliding_attention":
            layers.append((SlidingWindowSpec(1, hd, sliding_window=window),))
        elif kind == "compressed_sparse_attention":
            layers.append((CompressedAttentionSpec(hd, window, rates[kind], True, index_dim),))
        elif kind == "heavily_compressed_attention":
            layers.append((CompressedAttentionSpec(hd, window, rates[kind]),))
        else:
            raise ModelFactsError(f"{c.where}: layer type {kind!r} (layer {i}) is not one DeepSeek-V4 has "
                                  f"(model_type {c.model_type})")
    params = embed_params(c, c.req("vocab_size"), h, False) + h
    return Built(layers, params, ["weights: embeddings only (DeepSeek-V4's attention and MoE are not counted)"])
