"""Names as people know them: a catalogue name, a Hugging Face repo id a catalogue entry covers, or a path.

Each catalogue entry (runner/core/catalogue/<name>.json) may list `hf_repos`, the repo ids whose config.json
has that entry's architecture (instruct, base and quantized repos). `resolve` maps a repo id to its entry
before model_facts.load sees it, and hands back the raw config the engine rules read (quantization_config,
architectures, head counts), which ModelFacts does not keep.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..builtin_configs import BUILTIN, LEGACY_MODEL_TYPES, TEST_MODELS
from ..model_facts import CATALOGUE
from ..model_facts.catalogue import catalogue_name_for


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # model_facts.load names what is wrong with it


def resolve(name: str) -> tuple[str, dict | None]:
    """(what to pass to model_facts.load, the raw config.json dict or None where there is none to read)."""
    entry_path = CATALOGUE / f"{name}.json"
    if "/" not in name and entry_path.is_file():
        entry = _json(entry_path)
        return name, entry.get("config") if isinstance(entry, dict) else None
    path = Path(name)
    if path.is_dir() and (path / "config.json").is_file():
        raw = _json(path / "config.json")
        return name, raw if isinstance(raw, dict) else None
    if path.is_file():
        raw = _json(path)
        return name, raw if isinstance(raw, dict) else None
    alias = catalogue_name_for(name)
    if alias is not None:
        return resolve(alias)
    legacy = {**BUILTIN, **TEST_MODELS}.get(name)  # hand-written hyperparameters, read as model_facts.load does
    if legacy is not None:
        cls, kwargs = legacy
        return name, {"model_type": LEGACY_MODEL_TYPES[cls], **kwargs}
    return name, None
