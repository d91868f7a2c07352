"""ModelFacts: one model's cache specs per layer, and what they cost."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from .common import GPU_SIZES_GB, TP_SIZES, GPU_MEMORY_UTILIZATION, ModelFactsError, dtype_bytes, cdiv
from .specs import LayerCache, layer_kind
from .config import ConfigReader, check_fields
from .families import FAMILIES, WRAPPERS
from .families.generic import generic


@dataclass(frozen=True)
class ModelFacts:
    name: str
    model_type: str
    layers: tuple[LayerCache, ...]
    weight_params: int
    source: str = ""
    max_positions: int | None = None  # the config's context limit (max_position_embeddings / n_positions)
    defaults_used: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # MLA models: both layouts, each a full tuple of layers; `layers` is the one named by mla_layout.
    mla_layout: str | None = None
    mla_layouts: dict = field(default_factory=dict, compare=False, hash=False)
    # "family": read by a family module's rules; "generic": an unknown model_type read from the standard fields
    rules: str = "family"

    # --- transformers' layout
    def layer_cache_bytes(self, index: int, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> dict:
        """K, V and state bytes of one layer after seq_len tokens (transformers' layout)."""
        specs = self.layers[index]
        k = sum(s.k_bytes(seq_len, batch, dtype) for s in specs)
        v = sum(s.v_bytes(seq_len, batch, dtype) for s in specs)
        st = sum(s.state_bytes(batch, dtype) for s in specs)
        return {"kind": layer_kind(specs), "k_bytes": k, "v_bytes": v, "state_bytes": st, "bytes": k + v + st}

    def cache_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> int:
        check_shape(seq_len, batch)
        return sum(s.cache_bytes(seq_len, batch, dtype) for layer in self.layers for s in layer)

    def kind_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> dict[str, int]:
        """Bytes per cache kind (a hybrid Falcon-H1 layer counts under both of its kinds)."""
        out: dict[str, int] = {}
        for layer in self.layers:
            for s in layer:
                out[s.kind] = out.get(s.kind, 0) + s.cache_bytes(seq_len, batch, dtype)
        return out

    def bytes_per_token(self, dtype: str = "bfloat16") -> int:
        """What one more token adds while no cap is reached (the textbook figure)."""
        return sum((s.k_per_token + s.v_per_token) * dtype_bytes(dtype) for layer in self.layers for s in layer)

    def pricing_terms(self, dtype: str = "bfloat16") -> tuple[int, tuple[tuple[int, int], ...], int]:
        """cache_bytes(t, 1) = t x per_token - sum(b x max(0, t - cap)) + constant, as
        (per_token, ((b, cap), ...) with one entry per distinct cap, constant)."""
        per_token, constant = 0, 0
        capped: dict[int, int] = {}
        for layer in self.layers:
            for s in layer:
                b = (s.k_per_token + s.v_per_token) * dtype_bytes(dtype)
                per_token += b
                if s.cap is not None and b:
                    capped[s.cap] = capped.get(s.cap, 0) + b
                constant += s.state_bytes(1, dtype) + getattr(s, "prefix_tokens", 0) * b
        return per_token, tuple(sorted((b, cap) for cap, b in capped.items())), constant

    @property
    def caps(self) -> tuple[int, ...]:
        return tuple(sorted({s.cap for layer in self.layers for s in layer if s.cap is not None}))

    def groups(self) -> list[dict]:
        """Identical layers counted together, in order of first appearance."""
        seen: dict[LayerCache, int] = {}
        for layer in self.layers:
            seen[layer] = seen.get(layer, 0) + 1
        out = []
        for layer, count in seen.items():
            row = {"kind": layer_kind(layer), "count": count}
            if len(layer) == 1:
                row.update({k: v for k, v in layer[0].describe().items() if k != "kind"})
            elif layer:
                row["parts"] = [s.describe() for s in layer]
            out.append(row)
        return out

    def with_mla_layout(self, layout: str) -> "ModelFacts":
        if not self.mla_layouts:
            raise ModelFactsError(f"{self.name}: not an MLA model, it has no {layout!r} layout")
        if layout not in self.mla_layouts:
            raise ModelFactsError(f"MLA layout {layout!r}: expected one of {', '.join(self.mla_layouts)}")
        return replace(self, layers=self.mla_layouts[layout], mla_layout=layout)

    # --- the paged engine view (analytic, vLLM's rules)
    def engine_cache_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16", tp: int = 1) -> int:
        """Bytes a vLLM-style paged engine holds for `batch` requests of seq_len tokens, on one TP rank."""
        check_shape(seq_len, batch)
        return batch * sum(s.engine_bytes(seq_len, dtype, tp) for layer in self.layers for s in layer)

    # --- weights and what fits beside them
    def weight_bytes(self, dtype: str = "bfloat16") -> int:
        return self.weight_params * dtype_bytes(dtype)

    def fits(self, gpu_bytes: int, seq_len: int, tp: int = 1, dtype: str = "bfloat16",
             weight_dtype: str | None = None) -> int:
        """Requests of seq_len tokens whose engine-view cache (in `dtype`) fits beside the weights (in
        `weight_dtype`, default the same) on each GPU of a TP group."""
        budget = int(GPU_MEMORY_UTILIZATION * gpu_bytes) - cdiv(self.weight_bytes(weight_dtype or dtype), tp)
        per_request = self.engine_cache_bytes(seq_len, 1, dtype, tp)
        if budget <= 0:
            return 0
        return budget // per_request if per_request else -1  # -1: no per-request cache at all

    def fits_table(self, seqs, dtype: str = "bfloat16", weight_dtype: str | None = None) -> list[dict]:
        return [{"gpu_gb": gb, "tp": tp, "seq": seq, "requests": self.fits(gb * 10**9, seq, tp, dtype, weight_dtype)}
                for gb in GPU_SIZES_GB for tp in TP_SIZES for seq in seqs]


def check_shape(seq_len: int, batch: int) -> None:
    if seq_len < 0 or batch < 1:
        raise ModelFactsError(f"seq_len {seq_len} and batch {batch}: need seq_len >= 0 and batch >= 1")



def facts_from_config(raw: dict, name: str = "", where: str = "config.json", source: str = "") -> ModelFacts:
    """Describe the cache of the model whose config.json is `raw`."""
    if not isinstance(raw, dict):
        raise ModelFactsError(f"{where}: a config must be a JSON object, got {type(raw).__name__}")
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise ModelFactsError(f"{where}: config field 'model_type' is missing")
    text = raw
    if model_type in WRAPPERS:
        inner = raw.get("text_config")
        if not isinstance(inner, dict):
            raise ModelFactsError(f"{where}: config field 'text_config' is missing (model_type {model_type})")
        text = {**({"tie_word_embeddings": raw["tie_word_embeddings"]} if "tie_word_embeddings" in raw else {}),
                **inner}
        model_type = text.get("model_type") or WRAPPERS[model_type]
    elif model_type not in FAMILIES and isinstance(raw.get("text_config"), dict) and \
            raw.get("num_hidden_layers") is None:  # an unknown multimodal wrapper: its language model
        text = {**({"tie_word_embeddings": raw["tie_word_embeddings"]} if "tie_word_embeddings" in raw else {}),
                **raw["text_config"]}
        model_type = text.get("model_type") if isinstance(text.get("model_type"), str) else model_type
    if not isinstance(model_type, str):
        raise ModelFactsError(f"{where}: config field 'text_config.model_type' is not a string")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,100}", model_type):  # bert-generation, data2vec-text ...
        raise ModelFactsError(f"{where}: config field 'model_type' is {model_type[:40]!r}, not a model type name")
    check_fields(text, where)
    if text is not raw:
        check_fields({k: v for k, v in raw.items() if k != "text_config"}, where)
    c = ConfigReader(text, where, model_type)
    rules = "family" if model_type in FAMILIES else "generic"
    built = FAMILIES.get(model_type, generic)(c)
    notes = list(built.notes)
    if model_type == "kimi_k2":
        notes.append("kimi_k2 read as the DeepSeek-V3 architecture it uses")
    if text is not raw:
        notes.append("weights: the language model only (no vision tower)")
    layers = tuple(built.layers)
    mla_layouts = {}
    if built.mla_per_head is not None:
        mla_layouts = {"mla_latent": layers, "mla_per_head": tuple(built.mla_per_head)}
    limit = text.get("max_position_embeddings", text.get("n_positions"))
    return ModelFacts(name=name or where, model_type=model_type, layers=layers, weight_params=built.params,
                      source=source, max_positions=limit if isinstance(limit, int) and limit > 0 else None,
                      defaults_used=tuple(dict.fromkeys(c.defaults_used)), notes=tuple(notes),
                      mla_layout="mla_latent" if mla_layouts else None, mla_layouts=mla_layouts,
                      rules=rules)

