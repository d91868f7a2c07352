"""Shared by the tests of the measuring code (test_compaction, test_decode, test_pressure, ...): the CPU
device, a tiny model, run contexts, a fake cache, and the plain text of a built page. Not a test module."""
from __future__ import annotations

import html
import re
from types import SimpleNamespace

import pytest
import torch
from transformers.cache_utils import DynamicLayer

from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-gpt2", CPU, torch.float32)


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


def page_text(text: str) -> str:
    """A built page's visible text (scripts and tags dropped), whitespace collapsed: what a reader sees."""
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def element_ids(doc) -> set[str]:
    """Every id on a page parsed by htmldoc.Doc."""
    return {a["id"] for _tag, a in doc.elements if a.get("id")}
