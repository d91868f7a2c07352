"""Attention-free Mamba models: mamba and falcon_mamba (Mamba-1), mamba2 (Mamba-2). Every layer is a
cache_utils.LinearAttentionLayer holding a conv state and an SSM state, constant in the sequence length
(transformers 5.24: models/mamba/configuration_mamba.py, models/mamba2/configuration_mamba2.py and
models/falcon_mamba/configuration_falcon_mamba.py for the fields and their defaults).

- Mamba-1: intermediate = int(expand x hidden_size) (MambaConfig.__post_init__) unless the config saves
  intermediate_size; conv [intermediate,
  conv_kernel], SSM [intermediate, state_size]; time_step_rank "auto" = ceil(hidden_size / 16).
- Mamba-2: intermediate = expand x hidden_size; conv [intermediate + 2 x n_groups x state_size, conv_kernel],
  SSM [num_heads, head_dim, state_size].
"""
from __future__ import annotations

import math

from ..config import Built, ConfigReader
from ..specs import MambaStateSpec


def _embeddings(c: ConfigReader, vocab: int, h: int, tied_default: bool) -> int:
    tied = bool(c.opt("tie_word_embeddings", tied_default))
    return vocab * h * (1 if tied else 2)


def mamba(c: ConfigReader) -> Built:
    """mamba and falcon_mamba (its extra RMS norms of B, C and dt carry no weights)."""
    n_layers, h = c.opt("num_hidden_layers", 32), c.opt("hidden_size", 768)
    state, kernel, expand = c.opt("state_size", 16), c.opt("conv_kernel", 4), c.opt("expand", 2)
    # __post_init__ sets intermediate_size = int(expand x hidden_size), then PreTrainedConfig.__post_init__
    # applies the remaining kwargs: a saved intermediate_size wins (transformers 5.25 configuration_mamba.py)
    inter = c.maybe("intermediate_size") or int(expand * h)
    inter = c._int("intermediate_size", inter)
    dt_rank = c.opt("time_step_rank", "auto")
    dt_rank = math.ceil(h / 16) if dt_rank == "auto" else c._int("time_step_rank", dt_rank)
    spec = (MambaStateSpec(inter, kernel, (inter, state)),)
    bias, conv_bias = c.opt("use_bias", False), c.opt("use_conv_bias", True)
    mixer = h * 2 * inter + (2 * inter if bias else 0) + inter * kernel + (inter if conv_bias else 0) + \
        inter * (dt_rank + 2 * state) + dt_rank * inter + inter + inter * state + inter + inter * h + (h if bias else 0)
    params = _embeddings(c, c.opt("vocab_size", 50280), h, True) + n_layers * (mixer + h) + h
    return Built([spec] * n_layers, params)


def mamba2(c: ConfigReader) -> Built:
    n_layers, h = c.opt("num_hidden_layers", 64), c.opt("hidden_size", 4096)
    heads, head_dim = c.opt("num_heads", 128), c.opt("head_dim", 64)
    state, kernel, expand = c.opt("state_size", 128), c.opt("conv_kernel", 4), c.opt("expand", 2)
    groups = c.opt("n_groups", 8)
    inter = int(expand * h)
    conv_dim = inter + 2 * groups * state
    spec = (MambaStateSpec(conv_dim, kernel, (heads, head_dim, state), n_groups=groups, ssm_state_size=state),)
    bias, conv_bias = c.opt("use_bias", False), c.opt("use_conv_bias", True)
    proj = 2 * inter + 2 * groups * state + heads
    mixer = h * proj + (proj if bias else 0) + conv_dim * kernel + (conv_dim if conv_bias else 0) + 3 * heads + \
        inter + inter * h + (h if bias else 0)  # dt_bias, A_log, D; gated norm; out_proj
    params = _embeddings(c, c.opt("vocab_size", 32768), h, False) + n_layers * (mixer + h) + h
    return Built([spec] * n_layers, params)
