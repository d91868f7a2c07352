"""Built-in architectures (public config hyperparameters, random weights) and local checkpoints.

Nothing here touches the network: configs are constructed from the numbers below, and `--model PATH`
reads a local folder with HF_HUB_OFFLINE set. KV memory and step timing depend on tensor shapes, not on
weight values, so random weights measure the same cache; every run records which kind it used.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

# Set before transformers is imported anywhere: a stray hub lookup must fail fast, not hang.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# name -> (config class, hyperparameters), copied from each model's published config.json.
BUILTIN: dict[str, tuple[str, dict]] = {
    "gpt2": ("GPT2Config", dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)),
    "gpt2-medium": ("GPT2Config", dict(n_layer=24, n_head=16, n_embd=1024, n_positions=1024, vocab_size=50257)),
    "gpt2-large": ("GPT2Config", dict(n_layer=36, n_head=20, n_embd=1280, n_positions=1024, vocab_size=50257)),
    "gpt2-xl": ("GPT2Config", dict(n_layer=48, n_head=25, n_embd=1600, n_positions=1024, vocab_size=50257)),
    "llama-2-7b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096, rms_norm_eps=1e-5)),
    "llama-3.1-8b": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0)),
    "mistral-7b": ("MistralConfig", dict(  # v0.1: the release with a 4096-token sliding window
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768, sliding_window=4096,
        rms_norm_eps=1e-5)),
    "qwen2.5-0.5b": ("Qwen2Config", dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
        rms_norm_eps=1e-6, rope_theta=1000000.0, use_sliding_window=False, sliding_window=32768)),
    "qwen2.5-7b": ("Qwen2Config", dict(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768, tie_word_embeddings=False,
        rms_norm_eps=1e-6, rope_theta=1000000.0, use_sliding_window=False, sliding_window=131072)),
}

# A GPT-2-shaped toy for tests and --quick smoke runs on slow CPUs; not listed as a real architecture.
TEST_MODELS: dict[str, tuple[str, dict]] = {
    "tiny-gpt2": ("GPT2Config", dict(n_layer=2, n_head=4, n_embd=64, n_positions=512, vocab_size=512,
                                      bos_token_id=0, eos_token_id=0)),
    "tiny-llama-gqa": ("LlamaConfig", dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=512, max_position_embeddings=512)),
}


class ModelError(UserError):
    """A model name or path that cannot be loaded; the message says why and what would work."""


@dataclass
class LoadedModel:
    name: str
    config: object
    model: object | None  # None when only the config was asked for
    weights_random: bool
    source: str  # "builtin" | "local:<path>"

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


def _config_class(name: str):
    import transformers

    transformers.logging.set_verbosity_error()  # config lint chatter is noise in a measurement log
    return getattr(transformers, name)


def builtin_config(name: str):
    table = {**BUILTIN, **TEST_MODELS}
    if name not in table:
        raise ModelError(f"unknown model {name!r}; built-in models: {', '.join(BUILTIN)} "
                         "(or give the path of a local Hugging Face checkpoint folder)")
    cls_name, kwargs = table[name]
    return _config_class(cls_name)(**kwargs)


def is_local_path(name: str) -> bool:
    return os.sep in name or name.startswith(".") or Path(name).exists()


def load_config(name: str):
    if name in BUILTIN or name in TEST_MODELS:
        return builtin_config(name), True, "builtin"
    if is_local_path(name):
        path = Path(name)
        if not path.exists():
            raise ModelError(f"{name}: no such folder (and not a built-in model: {', '.join(BUILTIN)})")
        if not (path / "config.json").is_file():
            raise ModelError(f"{name}: not a Hugging Face checkpoint folder (no config.json in it)")
        from transformers import AutoConfig

        try:
            return AutoConfig.from_pretrained(path, local_files_only=True), False, f"local:{path}"
        except Exception as exc:  # noqa: BLE001 - any parse failure becomes one clear message
            raise ModelError(f"{path / 'config.json'}: cannot read config: {exc}") from None
    builtin_config(name)  # raises the error that lists the choices
    raise AssertionError("unreachable")


def load_model(name: str, device, dtype) -> LoadedModel:
    """Instantiate on `device` in `dtype` directly, so a 7B model never lands in host RAM at float32."""
    import torch
    from transformers import AutoModelForCausalLM

    config, random_weights, source = load_config(name)
    config.use_cache = True
    if random_weights:
        prev = torch.get_default_dtype()
        torch.manual_seed(0)
        try:
            torch.set_default_dtype(dtype)
            with torch.device(device):
                model = AutoModelForCausalLM.from_config(config)
        finally:
            torch.set_default_dtype(prev)
        model.to(dtype=dtype)
    else:
        path = source.split(":", 1)[1]
        try:
            try:
                model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
            except TypeError:  # transformers 4.x spells it torch_dtype
                model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, torch_dtype=dtype)
        except Exception as exc:  # noqa: BLE001 - a broken checkpoint is the user's to fix, not a traceback
            raise ModelError(f"{name}: cannot load weights: {str(exc).splitlines()[0]}") from None
        model.to(device)  # no device_map: that would need accelerate
    model.eval()
    return LoadedModel(name=name, config=config, model=model, weights_random=random_weights, source=source)


def describe_builtin() -> list[dict]:
    """One row per built-in architecture, for `kvreport models` and the crossover experiment."""
    from .kv_formula import kv_shape

    rows = []
    for name in BUILTIN:
        shape = kv_shape(builtin_config(name))
        rows.append({
            "name": name,
            "n_layers": shape.n_layers,
            "n_heads": shape.n_heads,
            "n_kv_heads": shape.n_kv_heads,
            "head_dim": shape.head_dim,
            "sliding_window": next((w for w in shape.sliding_windows if w), None),
            "kv_bytes_per_token": shape.bytes_per_token(2),
        })
    return rows


def parameter_count(name: str) -> int:
    """Parameters of a built-in architecture without allocating it (meta device)."""
    import torch
    from transformers import AutoModelForCausalLM

    config, _, _ = load_config(name)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
    return total
