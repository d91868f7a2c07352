"""GPT-2: n_layer / n_head / n_embd, every head cached, lm_head tied."""
from __future__ import annotations

from ..specs import FullAttentionSpec
from ..config import ConfigReader, Built


def gpt2(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.req("n_layer", "num_hidden_layers"), c.req("n_head", "num_attention_heads"), \
        c.req("n_embd", "hidden_size")
    inner = c.opt("n_inner", 4 * h)
    layers = [(FullAttentionSpec(n_heads, h // n_heads),)] * n_layers
    per_layer = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h)
    params = c.opt("vocab_size", 50257) * h + c.opt("n_positions", 1024) * h + n_layers * per_layer + 2 * h
    return Built(layers, params)  # lm_head tied to wte

