"""Inkling, Inkling2 and Inkling2-Loop: every layer attention plus four short-convolution states.

Sources (transformers 5.25.0): models/inkling/modeling_inkling.py (InklingAttention, InklingDecoderLayer) and
models/inkling2/modeling_inkling2.py (Inkling2Attention's key/value convolutions, the decoder layer's
post_attention_convolution and post_mlp_convolution): a "hybrid_sliding" layer attends over a sliding window
(sliding_window_size) with swa_num_key_value_heads x swa_head_dim, a "hybrid" layer over every token with
num_key_value_heads x head_dim (cache_utils: LinearAttentionAndSlidingWindowAttentionLayer /
LinearAttentionAndFullAttentionLayer); each layer keeps conv states for its keys and its values (KV heads x
head_dim channels, kernel sconv_kernel_size, an alias of conv_kernel_size) and two of hidden_size channels
(kernel conv_kernel_size), all in float32 (the convolutions run on `hidden_states.float()`).
models/inkling2_loop/modeling_inkling2_loop.py: layers loop_layer_index_start..end-1 run loop_num_passes times,
each pass with caches of its own (configuration_inkling2_loop.py: `loop_config` core_start / core_end /
num_passes override them). Defaults from each configuration_<x>.py, as save_pretrained leaves them out.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader, layer_types_from
from ..params import embed_params
from ..specs import CacheSpec, FullAttentionSpec, ShortConvStateSpec, SlidingWindowSpec

# hidden_size, layers, kv heads, head_dim, swa kv heads, swa head_dim, window (each config class's defaults)
DEFAULTS = {"inkling_text": (6144, 66, 8, 128, 16, 128, 512), "inkling2_text": (4608, 48, 8, 128, 8, 128, 1024),
            "inkling2_loop_text": (2304, 24, 8, 128, 8, 128, 1024)}


def inkling(c: ConfigReader) -> Built:
    h0, n0, kv0, hd0, skv0, shd0, w0 = DEFAULTS[c.model_type]
    h, n_layers = c.opt("hidden_size", h0), c.opt("num_hidden_layers", n0)
    kv, hd = c.opt("num_key_value_heads", kv0), c.opt("head_dim", hd0)
    swa_kv, swa_hd = c.opt("swa_num_key_value_heads", skv0), c.opt("swa_head_dim", shd0)
    window, kernel = c.opt("sliding_window_size", w0), c.opt("conv_kernel_size", 4, "sconv_kernel_size")
    if window < 1:
        raise ModelFactsError(f"{c.where}: config field 'sliding_window_size' is {window}, expected a positive "
                              f"integer (model_type {c.model_type})")
    hidden_convs = ShortConvStateSpec(2 * h, kernel, "float32")
    layers = []
    for i, kind in enumerate(layer_types_from(c, n_layers, ["hybrid_sliding"] * n_layers)):
        if kind == "hybrid_sliding":
            attn: CacheSpec = SlidingWindowSpec(swa_kv, swa_hd, sliding_window=window)
            kv_convs = ShortConvStateSpec(2 * swa_kv * swa_hd, kernel, "float32")
        elif kind == "hybrid":
            attn, kv_convs = FullAttentionSpec(kv, hd), ShortConvStateSpec(2 * kv * hd, kernel, "float32")
        else:
            raise ModelFactsError(f"{c.where}: layer type {kind!r} (layer {i}) is not one {c.model_type} has "
                                  "(expected 'hybrid' or 'hybrid_sliding')")
        layers.append((attn, kv_convs, hidden_convs))
    if c.model_type == "inkling2_loop_text":
        loop: dict = c.raw["loop_config"] if isinstance(c.raw.get("loop_config"), dict) else {}
        start = c._int("loop_config.core_start", loop.get("core_start", c.opt("loop_layer_index_start", 6)))
        end = c._int("loop_config.core_end", loop.get("core_end", c.opt("loop_layer_index_end", 18)))
        passes = c._int("loop_config.num_passes", loop.get("num_passes", c.opt("loop_num_passes", 3)))
        if not 0 <= start <= end <= n_layers or passes < 1:
            raise ModelFactsError(f"{c.where}: looped layers {start}..{end} x {passes} passes do not fit "
                                  f"{n_layers} layers (model_type {c.model_type})")
        layers += layers[start:end] * (passes - 1)  # each further pass caches the looped layers again
    params = embed_params(c, c.opt("vocab_size", 201024), h, False)
    return Built(layers, params, ["weights: embeddings only (Inkling's attention and MoE are not counted)"])
