"""Shared by the tests of the measuring code (test_compaction, test_decode, test_pressure, ...): the CPU
device, run contexts, and a fake cache (the `tiny` model fixture is in conftest.py). Not a test module (HTML
helpers: htmldoc.py)."""
from __future__ import annotations

from types import SimpleNamespace

import torch
from transformers.cache_utils import DynamicLayer

from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")


def make_ctx(loaded, **kw) -> RunContext:
    return RunContext(run_id=1, device=CPU, dtype=torch.float32, loaded=loaded, quick=True, **kw)


def ctx_for(name: str, **shared) -> RunContext:
    """A quick CPU context on built-in model `name`, with `shared` as what earlier experiments published."""
    return make_ctx(load_model(name, CPU, torch.float32), shared=dict(shared))


def fake_cache(nbytes: int):
    """A cache the adapter reads (transformers 5.x layout) holding `nbytes` of K+V in one layer."""
    layer = DynamicLayer()  # the adapter reads only layer types it knows
    layer.keys = torch.zeros(nbytes // 8, dtype=torch.float32)
    layer.values = torch.zeros_like(layer.keys)
    return SimpleNamespace(layers=[layer])

