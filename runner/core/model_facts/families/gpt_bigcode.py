"""GPT-BigCode (StarCoder): multi-query attention, one K/V head in one fused c_attn projection.

Source: transformers 5.25.0 models/gpt_bigcode/modeling_gpt_bigcode.py, GPTBigCodeAttention.__init__:
`self.kv_heads = 1 if self.multi_query else self.num_heads`, head_dim = n_embd / n_head; forward caches the
K and V split from c_attn (cache.update). configuration_gpt_bigcode.py: multi_query defaults to True.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from ..specs import FullAttentionSpec


def gpt_bigcode(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.req("n_layer", "num_hidden_layers"), c.req("n_head", "num_attention_heads"), \
        c.req("n_embd", "hidden_size")
    head_dim = h // n_heads
    kv = 1 if c.opt("multi_query", True) else n_heads
    inner = c.opt("n_inner", 4 * h)
    attn = h * (h + 2 * kv * head_dim) + (h + 2 * kv * head_dim) + h * h + h  # c_attn and c_proj, with biases
    per_layer = attn + (h * inner + inner) + (inner * h + h) + 4 * h  # MLP and two layer norms
    params = c.opt("vocab_size", 50257) * h + c.opt("n_positions", 1024) * h + n_layers * per_layer + 2 * h
    return Built([(FullAttentionSpec(kv, head_dim),)] * n_layers, params)  # lm_head tied to wte
