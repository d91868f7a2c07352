"""Parameter counts of the common blocks (biases where the module has them); each returns a count."""
from __future__ import annotations

from .config import ConfigReader


# Parameter counts (biases where the module has them). Each returns a number of parameters.
def attn_params(h: int, n_heads: int, n_kv: int, hd: int, qkv_bias=False, o_bias=False, q_factor=1) -> int:
    q = h * n_heads * hd * q_factor + (n_heads * hd * q_factor if qkv_bias else 0)
    kv = 2 * (h * n_kv * hd + (n_kv * hd if qkv_bias else 0))
    o = n_heads * hd * h + (h if o_bias else 0)
    return q + kv + o


def mlp_params(h: int, inter: int, gated=True, bias=False) -> int:
    n = (3 if gated else 2) * h * inter
    return n + ((2 * inter + h if gated else inter + h) if bias else 0)


def experts_params(h: int, n_experts: int, inter: int) -> int:
    return n_experts * 3 * h * inter  # gate, up and down per expert


def embed_params(c: ConfigReader, vocab: int, h: int, tie_default: bool) -> int:
    tied = bool(c.opt("tie_word_embeddings", tie_default))
    return vocab * h * (1 if tied else 2)

