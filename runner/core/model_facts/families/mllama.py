"""Mllama (Llama 3.2 Vision) text model: self-attention layers cache K/V; the cross-attention layers hold
nothing for a text-only prompt.

Source: transformers 5.25.0 models/mllama/modeling_mllama.py: MllamaTextModel builds
MllamaCrossAttentionDecoderLayer at the indices of `cross_attention_layers`; MllamaTextCrossAttention only
updates the cache from cross_attention_states (the vision features), which a text prompt has not, so those
layers stay empty. configuration_mllama.py: cross_attention_layers defaults to [3, 8, 13, ..., 38]; the
self-attention layers are Llama's GQA (num_key_value_heads, hidden_size / num_attention_heads).
"""
from __future__ import annotations

from ..config import Built, ConfigReader, kv_heads
from ..params import attn_params, embed_params, mlp_params
from ..specs import FullAttentionSpec


def mllama_text(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.opt("num_hidden_layers", 40), c.opt("num_attention_heads", 32), c.opt("hidden_size", 4096)
    n_kv = kv_heads(c, n_heads, 8)
    hd = h // n_heads
    cross = set(c.opt("cross_attention_layers", [3, 8, 13, 18, 23, 28, 33, 38]) or [])
    layers = [() if i in cross else (FullAttentionSpec(n_kv, hd),) for i in range(n_layers)]
    inter = c.opt("intermediate_size", 14336)
    params = embed_params(c, c.opt("vocab_size", 128256), h, False) + h + \
        n_layers * (attn_params(h, n_heads, n_kv, hd) + 2 * h + mlp_params(h, inter))
    return Built(layers, params, ["weights: self- and cross-attention layers counted alike (analytic)"])
