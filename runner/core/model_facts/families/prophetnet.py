"""ProphetNet's decoder as a causal LM: the main stream's K/V, no n-gram stream cached, no cross-attention.

Sources (transformers 5.25.0): models/prophetnet/configuration_prophetnet.py: num_decoder_layers 12,
num_decoder_attention_heads 16, hidden_size 1024. models/prophetnet/modeling_prophetnet.py,
ProphetNetNgramSelfAttention: the hidden states split into the main stream and `ngram` predict streams, and only
the main stream's keys and values go to the cache (`curr_cache.update(main_key_states, main_value_states, ...)`),
hidden_size wide (heads x hidden_size / heads); ProphetNetForCausalLM has no encoder, so its cross-attention
caches nothing.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from ..params import embed_params
from ..specs import FullAttentionSpec


def prophetnet(c: ConfigReader) -> Built:
    n_layers, h = c.opt("num_decoder_layers", 12), c.opt("hidden_size", 1024)
    heads = c.opt("num_decoder_attention_heads", 16)
    if not heads or h % heads:
        raise ModelFactsError(f"{c.where}: hidden_size {h} is not a multiple of num_decoder_attention_heads "
                              f"{heads} (model_type {c.model_type})")
    layers = [(FullAttentionSpec(heads, h // heads),)] * n_layers
    params = embed_params(c, c.opt("vocab_size", 30522), h, True)
    return Built(layers, params, ["weights: embeddings only (ProphetNet's decoder layers are not counted)"])
