"""GPT-Neo: global and local layers by `attention_types`, every layer caching every token.

Source: transformers 5.25.0 models/gpt_neo/configuration_gpt_neo.py (attention_types such as
[[["global", "local"], 12]] expand to one type per layer; num_layers, num_heads, hidden_size) and
modeling_gpt_neo.py: local layers only mask beyond window_size (GPTNeoSelfAttention's bias), and the model's
cache is `DynamicCache(config=self.config)` of a config with no sliding_window or layer_types, so every layer
is a full DynamicLayer holding num_heads x hidden_size / num_heads per token.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from ..specs import FullAttentionSpec


def gpt_neo(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.opt("num_layers", 24), c.opt("num_heads", 16), c.opt("hidden_size", 2048)
    inner = c.maybe("intermediate_size") or 4 * h
    inner = c._int("intermediate_size", inner)
    per_layer = 3 * h * h + h * h + h + (h * inner + inner) + (inner * h + h) + 4 * h  # q, k, v (no bias), out
    params = c.opt("vocab_size", 50257) * h + c.opt("max_position_embeddings", 2048) * h + n_layers * per_layer + 2 * h
    return Built([(FullAttentionSpec(n_heads, h // n_heads),)] * n_layers, params)  # lm_head tied to wte
