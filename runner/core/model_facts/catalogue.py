"""Finding a model's config: the catalogue, the hand-written built-ins, or a local file or folder."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..builtin_configs import BUILTIN, LEGACY_MODEL_TYPES, TEST_MODELS
from .common import ModelFactsError
from .config import read_json_file
from .facts import ModelFacts, facts_from_config

CATALOGUE = Path(__file__).resolve().parent.parent / "catalogue"


def catalogue_names() -> list[str]:
    """Models in runner/core/catalogue/ (files with a "config"; mla_layouts.json and the like are not models)."""
    names = []
    for path in sorted(CATALOGUE.glob("*.json")) if CATALOGUE.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            names.append(path.stem)  # listed, so that loading it reports what is wrong with it
            continue
        if isinstance(entry, dict) and "config" in entry:
            names.append(path.stem)
    return names


@lru_cache(maxsize=1)
def aliases() -> dict[str, str]:
    """Lower-cased Hugging Face repo id -> catalogue name, from every entry's `hf_repos` (the repo ids whose
    config.json has that entry's architecture)."""
    table: dict[str, str] = {}
    for path in sorted(CATALOGUE.glob("*.json")) if CATALOGUE.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue  # load() reports a broken entry when it is asked for
        repos = entry.get("hf_repos") if isinstance(entry, dict) else None
        for repo in repos if isinstance(repos, list) else []:
            if isinstance(repo, str):
                table.setdefault(repo.lower(), path.stem)
    return table


def catalogue_name_for(name: str) -> str | None:
    """The catalogue entry a repo id (e.g. meta-llama/Llama-3.1-8B-Instruct) belongs to, or None."""
    return aliases().get(name.strip().lower())


def _catalogue_entry(name: str) -> tuple[dict, str] | None:
    path = CATALOGUE / f"{name}.json"
    if not path.is_file():
        return None
    entry = _read_json(path)
    if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
        raise ModelFactsError(f"{path}: a catalogue entry needs a 'config' object")
    src = entry.get("source")
    return entry["config"], src if isinstance(src, str) else json.dumps(src, sort_keys=True)


def _legacy(name: str) -> tuple[dict, str] | None:
    table = {**BUILTIN, **TEST_MODELS}
    if name not in table:
        return None
    cls, kwargs = table[name]
    return ({"model_type": LEGACY_MODEL_TYPES[cls], **kwargs},
            "runner/core/builtin_configs.py (built-in hyperparameters)")


def builtin_names() -> list[str]:
    """Every built-in architecture: the catalogue's and the hand-written ones it does not carry."""
    return sorted(set(catalogue_names()) | set(BUILTIN))


def _read_json(path: Path):
    return read_json_file(path)


def load(name_or_path: str) -> ModelFacts:
    """Facts of a catalogue name, a legacy built-in name, a config.json file or a folder holding one."""
    found = _catalogue_entry(name_or_path) if "/" not in name_or_path and name_or_path not in (".", "..") else None
    if found is None and "/" not in name_or_path:
        found = _legacy(name_or_path)
    if found is not None:
        config, source = found
        return facts_from_config(config, name=name_or_path, where=f"catalogue model {name_or_path}", source=source)
    path = Path(name_or_path)
    alias = None if path.exists() else catalogue_name_for(name_or_path)
    entry = _catalogue_entry(alias) if alias is not None else None
    if entry is not None:  # a repo id people know the model by; a local path of the same spelling wins
        config, source = entry
        return facts_from_config(config, name=name_or_path, where=f"catalogue model {alias}", source=source)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ModelFactsError(f"{name_or_path}: no config.json in this folder")
    elif not path.is_file():
        raise ModelFactsError(f"unknown model {name_or_path!r}: not a built-in model ({', '.join(builtin_names())})"
                              " and no such config.json file or folder")
    return facts_from_config(_read_json(path), name=name_or_path, where=str(path), source=f"local:{path}")
