"""CPM-Ant: every layer caches prompt_length prompt tokens ahead of the sequence.

Source: transformers 5.25.0 models/cpmant/modeling_cpmant.py, CpmAntModel.forward ("add prompts ahead":
prompt_length prompt ids are concatenated before input_ids and run through every layer, so the cache holds
seq + prompt_length tokens); CpmAntAttention caches num_attention_heads x dim_head per token (project_k,
project_v; cache.update). configuration_cpmant.py: dim_head 128, prompt_length 32, num_hidden_layers 48.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from ..specs import FullAttentionSpec


def cpmant(c: ConfigReader) -> Built:
    n_layers, n_heads, h = c.opt("num_hidden_layers", 48), c.opt("num_attention_heads", 32), c.opt("hidden_size", 4096)
    dim_head, prompt = c.opt("dim_head", 128), c.opt("prompt_length", 32)
    ff, vocab, prompt_types = c.opt("dim_ff", 10240), c.opt("vocab_size", 30720), c.opt("prompt_types", 32)
    per_layer = 4 * h * n_heads * dim_head + 2 * h * ff + ff * h + 2 * h  # q, k, v, out; gated FFN; two norms
    params = (vocab + prompt_types * prompt) * h + n_layers * per_layer + h
    spec = FullAttentionSpec(n_heads, dim_head, prefix_tokens=prompt)
    return Built([(spec,)] * n_layers, params, [f"caches {prompt} prompt tokens ahead of every sequence"])
