"""Built-in architectures (public config hyperparameters, random weights) and local checkpoints, never the
network: `resolve(name)` gives a ModelSpec, `load_model(name, device, dtype)` a LoadedModel (a KV-faithful
replica when the model is over the build budget). A model folder is data, never code: no remote code, no
`auto_map`, safetensors only, shards inside the folder. Method: docs/methods/models.md."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import transformers
from transformers import CONFIG_MAPPING, AutoConfig, AutoModelForCausalLM

from ..core import model_facts
from ..core.builtin_configs import BUILTIN, LEGACY_MODEL_TYPES, TEST_MODELS
from ..core.errors import ModelError
from ..core.model_facts import ModelFactsError, builtin_names, catalogue_names
from ..core.model_facts.config import check_fields, read_json_file
from .replicas import (instantiate, meta_parameter_count, model_budget_bytes, plan_replica,
                       register_cache_only_attention)

CATALOGUE = model_facts.CATALOGUE


# Files whose presence makes a folder a checkpoint (real weights) rather than a config-only folder. Only
# safetensors are loaded: a pickle (pytorch_model.bin) can run code when read.
_SAFE_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
_PICKLE_WEIGHT_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
_WEIGHT_FILES = _SAFE_WEIGHT_FILES + _PICKLE_WEIGHT_FILES
# Fields a config.json carries that would make random weights need a quantization kernel or remote code. A
# catalogue config (kvreport's own data) drops auto_map; a folder or file from a user with one is refused.
_DROPPED_FIELDS = ("quantization_config", "auto_map")
# Passed to every transformers call that reads a folder: never the repository's code, never a prompt on stdin
# (dynamic_module_utils.resolve_trust_remote_code only asks when it is None).
_NO_REMOTE_CODE = {"trust_remote_code": False, "local_files_only": True}


# What still runs on a replica: the cache sizes (exact) and the analytic crossover and fits. Everything timed
# (decode, interference, pressure, compaction...) would time a model that is not the published one.
REPLICA_EXPERIMENTS = ("cache_tensors", "crossover")


def replica_skip_reason(loaded) -> str:
    return (f"{loaded.name} was built as a KV-faithful replica ({loaded.replica['instantiated']}; shrunk: "
            f"{', '.join(sorted(loaded.replica['shrunk'])) or 'nothing'}): its cache sizes are exact, but timings "
            "and memory pressure would measure a different model")


@dataclass
class ModelSpec:
    """Where a --model value points: its config as JSON and how it may be built."""
    name: str
    raw: dict | None         # the config.json dict (None for a checkpoint: transformers reads the folder)
    origin: str              # builtin | checkpoint | config_file | config_folder
    source: str              # what rows record: builtin:<name> (<published source>), local:<path>, config:<path>
    path: Path | None = None


@dataclass
class LoadedModel:
    name: str
    config: object
    model: object | None  # None when only the config was asked for
    weights_random: bool
    source: str  # "builtin:..." | "local:<path>" | "config:<path>"
    raw_config: dict | None = None
    # What was built when the model is a KV-faithful replica (None: the model itself): JSON-able.
    replica: dict | None = None
    # Replicas built one layer per cache kind: full-model layer index -> index of the layer built for it.
    layer_map: list[int] | None = None
    # The published architecture's config (a replica's `config` is the shrunk one it was built from).
    full_config: object | None = None

    def __post_init__(self):
        if self.full_config is None:
            self.full_config = self.config

    @property
    def is_replica(self) -> bool:
        return self.replica is not None

    def build_json(self) -> str:
        """The JSON text rows carry: what was instantiated and what was shrunk."""
        return json.dumps(self.replica or {"instantiated": "full model", "shrunk": {}}, sort_keys=True)

    def weight_bytes(self) -> int:
        if self.model is None:
            raise ValueError("weights were not loaded")
        seen, total = set(), 0
        for p in list(self.model.parameters()) + list(self.model.buffers()):
            key = p.data_ptr()
            if key in seen:  # tied embeddings are one tensor
                continue
            seen.add(key)
            total += p.numel() * p.element_size()
        return total

    def step_weight_bytes(self) -> int:
        """Weight bytes one decode step streams from memory: all of them except an input embedding table
        that is not shared with the output layer, since a lookup reads only the new tokens' rows (for
        llama-3.1-8b that table is 1 GB of 16 GB; GPT-2 ties it to the output layer, which reads it all)."""
        total = self.weight_bytes()
        emb = self.model.get_input_embeddings()
        out = self.model.get_output_embeddings()
        if emb is not None and (out is None or out.weight.data_ptr() != emb.weight.data_ptr()):
            total -= emb.weight.numel() * emb.weight.element_size()
        return total


def _quiet_transformers():
    transformers.logging.set_verbosity_error()  # config lint chatter is noise in a measurement log


def _read_config_json(path: Path, untrusted: bool = True) -> dict:
    """A config.json read bounded (size, depth, digits; transformers' {"__float__": ...} decoded) and, when it
    comes from a user, checked against the model facts' schema and refused if it names its own code."""
    try:
        raw = read_json_file(path)
    except ModelFactsError as exc:
        raise ModelError(str(exc)) from None
    if not isinstance(raw, dict):
        raise ModelError(f"{path}: a config.json must be a JSON object, got {type(raw).__name__}")
    if untrusted:
        if "auto_map" in raw or isinstance(raw.get("text_config"), dict) and "auto_map" in raw["text_config"]:
            raise ModelError(f"{path}: config field 'auto_map' names the model's own Python code, and kvreport never "
                             "runs a model folder's code; delete 'auto_map' to measure it with transformers' "
                             f"own classes for model_type {raw.get('model_type')!r}")
        try:
            check_fields(raw, str(path))
            if isinstance(raw.get("text_config"), dict):
                check_fields(raw["text_config"], str(path))
        except ModelFactsError as exc:
            raise ModelError(str(exc)) from None
    return raw


def _check_weights(path: Path) -> None:
    """Safetensors only, and an index whose shards all lie in the folder."""
    if not any((path / f).is_file() for f in _SAFE_WEIGHT_FILES):
        pickles = [f for f in _PICKLE_WEIGHT_FILES if (path / f).is_file()]
        raise ModelError(f"{path}: weights only as {pickles[0]} (a pickle, which can run code when loaded); "
                         "kvreport loads safetensors only: convert them, or remove them to measure the config alone")
    index = path / "model.safetensors.index.json"
    if not index.is_file():
        return
    try:
        data = read_json_file(index)
    except ModelFactsError as exc:
        raise ModelError(str(exc)) from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise ModelError(f"{index}: field 'weight_map' is missing or not an object")
    root = path.resolve()
    for shard in set(weight_map.values()):
        target = (path / shard).resolve() if isinstance(shard, str) and shard else None
        if target is None or target.parent != root and root not in target.parents:
            raise ModelError(f"{index}: shard {str(shard)[:80]!r} lies outside the model folder; refused")


def _catalogue_spec(name: str) -> ModelSpec:
    path = CATALOGUE / f"{name}.json"
    entry = _read_config_json(path, untrusted=False)
    if not isinstance(entry.get("config"), dict):
        raise ModelError(f"{path}: a catalogue entry needs a 'config' object")
    src = entry.get("source") or {}
    where = f"{src.get('repo')}/{src.get('file')}@{src.get('revision')}" if isinstance(src, dict) else str(src)
    return ModelSpec(name, entry["config"], "builtin", f"builtin:{name} ({where})")


def is_local_path(name: str) -> bool:
    return os.sep in name or name.startswith(".") or name.endswith(".json") or Path(name).exists()


def resolve(name: str) -> ModelSpec:
    """A built-in name, a checkpoint folder, a config.json file or a folder holding only a config.json."""
    if name in catalogue_names():
        return _catalogue_spec(name)
    table = {**BUILTIN, **TEST_MODELS}
    if name in table:
        cls_name, kwargs = table[name]
        return ModelSpec(name, {"model_type": LEGACY_MODEL_TYPES[cls_name], **kwargs}, "builtin",
                         f"builtin:{name} (runner/measure/models.py)")
    if not is_local_path(name):
        raise ModelError(f"unknown model {name!r}; built-in models: {', '.join(builtin_names())} "
                         "(or give a config.json file, or a folder with a config.json, with or without weights)")
    path = Path(name)
    if not path.exists():
        raise ModelError(f"{name}: no such folder or config.json file "
                         f"(and not a built-in model: {', '.join(builtin_names())})")
    if path.is_file():
        return ModelSpec(name, _read_config_json(path), "config_file", f"config:{path}", path)
    if not (path / "config.json").is_file():
        raise ModelError(f"{name}: not a Hugging Face model folder (no config.json in it)")
    if any((path / f).is_file() for f in _WEIGHT_FILES):
        _read_config_json(path / "config.json")  # refused here, before transformers opens the folder
        _check_weights(path)
        return ModelSpec(name, None, "checkpoint", f"local:{path}", path)
    return ModelSpec(name, _read_config_json(path / "config.json"), "config_folder", f"config:{path}", path)


def config_from_dict(raw: dict, where: str):
    """A transformers config of the language model `raw` describes (a multimodal config's text_config), and
    notes on what was read differently from the file. Nothing downloads; remote code is never run."""
    _quiet_transformers()
    raw = {k: v for k, v in raw.items() if k not in _DROPPED_FIELDS}
    notes = []
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise ModelError(f"{where}: config field 'model_type' is missing")
    if model_type not in CONFIG_MAPPING:
        # A re-badged architecture (Kimi-K2's kimi_k2 is DeepseekV3ForCausalLM) is built as the class it names.
        arch = next((a for a in raw.get("architectures") or [] if hasattr(transformers, str(a))), None)
        if arch is None:
            raise ModelError(f"{where}: model_type {model_type!r} is not an architecture transformers "
                             f"{transformers.__version__} knows (and no known class in 'architectures')")
        known = getattr(transformers, arch).config_class.model_type
        notes.append(f"model_type {model_type} is not in transformers {transformers.__version__}; "
                     f"built as {known} (architectures: {arch})")
        model_type = known
    raw = {**raw, "model_type": model_type}
    try:
        config = CONFIG_MAPPING[model_type].from_dict(raw)
    except Exception as exc:  # noqa: BLE001 - a config transformers rejects is the file's problem
        raise ModelError(f"{where}: transformers cannot build a {model_type} config: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if text is not config:
        notes.append(f"multimodal {model_type}: the language model ({text.model_type}) is built")
        config = text
    return config, notes


def builtin_config(name: str):
    if name not in catalogue_names() and name not in BUILTIN and name not in TEST_MODELS:
        raise ModelError(f"unknown model {name!r}; built-in models: {', '.join(builtin_names())} "
                         "(or give a config.json file, or a folder with a config.json, with or without weights)")
    spec = resolve(name)
    return config_from_dict(spec.raw, f"built-in model {name}")[0]


def load_config(name: str):
    """(config, random_weights, source) for any --model value."""
    spec = resolve(name)
    if spec.origin == "checkpoint":
        _quiet_transformers()
        try:
            return AutoConfig.from_pretrained(spec.path, **_NO_REMOTE_CODE), False, spec.source
        except Exception as exc:  # noqa: BLE001 - any parse failure becomes one clear message
            raise ModelError(f"{spec.path / 'config.json'}: cannot read config: {exc}") from None
    where = f"built-in model {name}" if spec.origin == "builtin" else str(
        spec.path / "config.json" if spec.origin == "config_folder" else spec.path)
    return config_from_dict(spec.raw, where)[0], True, spec.source


def load_model(name: str, device, dtype, budget_bytes: int | None = None, force_replica: bool | str = False
               ) -> LoadedModel:
    """Instantiate on `device` in `dtype` directly, so a 7B model never lands in host RAM at float32. A
    model whose weights exceed the budget is built as a KV-faithful replica (see plan_replica)."""
    spec = resolve(name)
    dtype_bytes = torch.tensor([], dtype=dtype).element_size()
    budget = model_budget_bytes(device) if budget_bytes is None else budget_bytes
    notes: list[str] = []
    if spec.origin == "checkpoint":
        raw = _read_config_json(spec.path / "config.json")
        config, notes = config_from_dict(raw, str(spec.path / "config.json"))
        if meta_parameter_count(config) * dtype_bytes > budget:
            # never loaded whole: its config is built as a replica with random weights, as a config-only model
            notes.append(f"checkpoint weights exceed the build budget of {budget / 2**30:,.1f} GiB "
                         "(KVREPORT_MODEL_BUDGET_GB): not loaded; built from its config with random weights")
            spec = ModelSpec(name, raw, "config_folder", f"config:{spec.path}", spec.path)
    if spec.origin != "checkpoint":
        where = f"built-in model {name}" if spec.origin == "builtin" else spec.source.split(":", 1)[1]
        config, more_notes = config_from_dict(spec.raw, where)
        notes = notes + more_notes
        built_config, record, layer_map = plan_replica(config, spec.raw, dtype_bytes, budget, force=force_replica)
        if record is not None:
            record["notes"] = notes
            model = instantiate(built_config, device, dtype, register_cache_only_attention())
        else:
            model = instantiate(built_config, device, dtype)
        return LoadedModel(name=name, config=model.config, model=model, weights_random=True, source=spec.source,
                           raw_config=spec.raw, replica=record, layer_map=layer_map, full_config=config)
    _quiet_transformers()
    config, _, _ = load_config(name)
    config.use_cache = True
    try:
        try:
            model = AutoModelForCausalLM.from_pretrained(spec.path, dtype=dtype, use_safetensors=True,
                                                         **_NO_REMOTE_CODE)
        except TypeError:  # transformers 4.x spells it torch_dtype
            model = AutoModelForCausalLM.from_pretrained(spec.path, torch_dtype=dtype, use_safetensors=True,
                                                         **_NO_REMOTE_CODE)
    except Exception as exc:  # noqa: BLE001 - a broken checkpoint is the user's to fix, not a traceback
        raise ModelError(f"{name}: cannot load weights: {str(exc).splitlines()[0]}") from None
    model.to(device)  # no device_map: that would need accelerate
    model.eval()
    return LoadedModel(name=name, config=config, model=model, weights_random=False, source=spec.source,
                       raw_config=raw)
