"""Encoder-only families that a causal-LM class builds (BertLMHeadModel and its copies): they cache keys and
values only when the config says `is_decoder`; otherwise the forward turns the cache off.

Source: transformers 5.25.0 models/bert/modeling_bert.py, BertModel.forward: `if self.config.is_decoder:
use_cache = ... else: use_cache = False` (the same in the modeling files of every family below, which copy it,
and in transformers 5.17). With `is_decoder` each layer is a full-attention layer of num_attention_heads heads
of hidden_size / num_attention_heads (BertSelfAttention), read by the generic reading.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from .generic import generic

ENCODER_ONLY = ("bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie",
                "megatron-bert", "rembert", "roberta", "roberta-prelayernorm", "roc_bert", "roformer",
                "xlm-roberta", "xlm-roberta-xl", "xmod")


def encoder_only(c: ConfigReader) -> Built:
    built = generic(c)
    built.notes[:] = [n for n in built.notes if not n.startswith("rules: generic")]
    if not c.opt("is_decoder", False):
        built.layers = [()] * len(built.layers)
        built.notes.append(f"{c.model_type} caches nothing unless the config sets is_decoder (its causal-LM "
                           "class then runs as a decoder)")
    return built
