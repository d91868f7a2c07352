"""LongCat-Flash: two MLA attention sublayers in each decoder layer, each with its own cache layer.

Source: transformers 5.25.0 models/longcat_flash/modeling_longcat_flash.py, LongcatFlashDecoderLayer:
`self.self_attn = nn.ModuleList([LongcatFlashMLA(config=config, layer_idx=layer_idx * 2 + i) for i in [0, 1]])`;
configuration_longcat_flash.py: num_hidden_layers is derived as 2 x num_layers. Each sublayer caches the MLA
latent as DeepSeek-V3 does, read by the generic reading's MLA rule.
"""
from __future__ import annotations

from ..config import Built, ConfigReader
from .generic import generic


def longcat_flash(c: ConfigReader) -> Built:
    layers = c.opt("num_layers", 28)
    raw = {k: v for k, v in c.raw.items() if k not in ("num_layers", "num_hidden_layers")}
    inner = ConfigReader({**raw, "num_hidden_layers": 2 * layers}, c.where, c.model_type)
    built = generic(inner)
    c.defaults_used.extend(inner.defaults_used)
    built.notes[:] = [n for n in built.notes if not n.startswith("rules: generic")]
    built.notes.append("two MLA sublayers per decoder layer, each counted as a layer")
    return built
