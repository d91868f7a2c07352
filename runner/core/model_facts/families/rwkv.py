"""RWKV (RWKV-4): attention-free; each layer's state is a fixed number of hidden_size vectors.

Source: transformers 5.25.0 models/rwkv/modeling_rwkv.py, RwkvModel.forward: `shape = (batch, hidden_size,
num_hidden_layers)`, five state tensors, `dtype=inputs_embeds.dtype if i <= 1 else torch.float32`
(specs.RWKVStateSpec). configuration_rwkv.py: hidden_size 4096, num_hidden_layers 32, attention_hidden_size
and intermediate_size derived from hidden_size when null.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from ..specs import RWKVStateSpec


def rwkv(c: ConfigReader) -> Built:
    n_layers, h = c.opt("num_hidden_layers", 32), c.opt("hidden_size", 4096)
    att = c.maybe("attention_hidden_size") or h
    inter = c.maybe("intermediate_size") or 4 * h
    att, inter = c._int("attention_hidden_size", att), c._int("intermediate_size", inter)
    # time mixing: key, value, receptance, output, decay, first, three mixes; channel mixing: key, value,
    # receptance, two mixes; two layer norms
    per_layer = 3 * h * att + att * h + 2 * att + 3 * h + (h * inter + inter * h + h * h + 2 * h) + 4 * h
    vocab = c.opt("vocab_size", 50277)
    params = vocab * h * (1 if c.opt("tie_word_embeddings", False) else 2) + n_layers * per_layer + 4 * h
    return Built([(RWKVStateSpec(h),)] * n_layers, params, ["weights: analytic"])
