"""The model catalogue (runner/catalogue/<name>.json): one published config.json per file, kept verbatim,
each with the source it was read from written beside it (issue 24)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "runner" / "catalogue"
FILES = sorted(CATALOGUE.glob("*.json"))
MODELS = [p for p in FILES if p.name != "mla_layouts.json"]  # the one file that is a measurement, not a model
FAMILIES = {"mha", "gqa", "mqa", "mla", "sliding_global", "chunked", "linear_hybrid", "mamba_hybrid",
            "mamba2_hybrid"}


def test_catalogue_holds_at_least_twenty_models():
    assert len(MODELS) >= 20, [p.name for p in MODELS]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_entry_is_a_sourced_published_config(path):
    entry = json.loads(path.read_text())
    assert entry["name"] == path.stem
    assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", entry["name"]), "names are lowercase-hyphen"
    assert entry["family"] in FAMILIES
    source = entry["source"]
    assert isinstance(source["repo"], str) and "/" in source["repo"]
    assert isinstance(source["file"], str) and source["file"].endswith(".json")
    assert source["revision"] is None or re.fullmatch(r"[0-9a-f]{40}", source["revision"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", source["retrieved"])
    assert source["via"].strip()
    config = entry["config"]
    assert isinstance(config, dict) and config
    model_type = config.get("model_type") or (config.get("text_config") or {}).get("model_type")
    assert isinstance(model_type, str) and model_type


def test_every_builtin_with_a_catalogue_entry_matches_its_published_numbers():
    """A built-in dict in runner/models.py that has a catalogue entry agrees with the published file on the
    fields that shape the KV cache."""
    from kvreport.runner.models import BUILTIN

    fields = ["n_layer", "n_head", "n_embd", "hidden_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "sliding_window", "head_dim"]
    checked = 0
    for name, (_cls, kwargs) in BUILTIN.items():
        path = CATALOGUE / f"{name}.json"
        if not path.exists():
            continue
        config = json.loads(path.read_text())["config"]
        for field in fields:
            if field in kwargs and field in config:
                assert kwargs[field] == config[field], (name, field, kwargs[field], config[field])
                checked += 1
    assert checked, "no built-in was compared"


def test_catalogue_json_travels_in_the_wheel():
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "kvreport.runner.catalogue" in setuptools["packages"]
    assert "*.json" in setuptools["package-data"]["*"]
