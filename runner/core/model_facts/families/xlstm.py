"""xLSTM (mLSTM blocks): a constant recurrent state per block, no KV cache.

Source (transformers 5.25.0): models/xlstm/configuration_xlstm.py: num_hidden_layers (else num_blocks),
num_heads 8, hidden_size 4096, qk_dim = hidden_size * qk_dim_factor (0.5) and v_dim = hidden_size *
v_dim_factor (1.0), each rounded up to a multiple of 64 (round_up_to_next_multiple_of), per head divided by
num_heads; models/xlstm/modeling_xlstm.py, xLSTMCache: the state of every block (specs.XLSTMStateSpec).
"""
from __future__ import annotations

import math

from ..common import ModelFactsError
from ..config import Built, ConfigReader
from ..params import embed_params
from ..specs import XLSTMStateSpec


def _width(c: ConfigReader, h: int, factor_key: str, default: float) -> int:
    factor = c.opt(factor_key, default)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
        raise ModelFactsError(f"{c.where}: config field {factor_key!r} is {factor!r}, expected a positive number "
                              f"(model_type {c.model_type})")
    return int(math.ceil(h * factor / 64) * 64)


def xlstm(c: ConfigReader) -> Built:
    n_layers = c.req("num_hidden_layers", "num_blocks")
    h, heads = c.opt("hidden_size", 4096), c.opt("num_heads", 8)
    if not heads:
        raise ModelFactsError(f"{c.where}: config field 'num_heads' is 0 (model_type {c.model_type})")
    spec = XLSTMStateSpec(heads, _width(c, h, "qk_dim_factor", 0.5) // heads,
                          _width(c, h, "v_dim_factor", 1.0) // heads)
    params = embed_params(c, c.opt("vocab_size", 50304), c.opt("embedding_dim", h) or h, False)
    return Built([(spec,)] * n_layers, params, ["weights: embeddings only (the mLSTM blocks are not counted)"])
