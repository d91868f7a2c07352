"""The analytic KV-cache size of a transformer, from its config alone.

bytes/token = 2 (K and V) x n_layers x n_kv_heads x d_head x dtype_bytes

Where runner/core/model_facts.py describes the architecture (MLA, chunked attention, layer patterns, linear-attention
and Mamba states), `facts_for` returns its per-layer facts and callers use those; `kv_shape` stays for the K/V
geometry columns and for architectures the facts do not know.

Real configs complicate the textbook formula in three places, all handled here:
- grouped/multi-query attention: the cache holds `num_key_value_heads`, not `num_attention_heads`;
- an explicit `head_dim` that is not hidden_size / n_heads (Gemma, some Qwen variants);
- sliding-window layers, whose cache is capped: transformers' DynamicSlidingWindowLayer keeps only the
  last `sliding_window - 1` tokens once the sequence is longer (it needs the newest token's K/V separately),
  so per-token cost of such a layer falls as the sequence grows. `cached_tokens_per_layer` models that.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model_facts import (GPU_MEMORY_UTILIZATION, GPU_SIZES_GB, TP_SIZES, VLLM_RULES, ModelFactsError,
                          facts_from_config)

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8": 1}


@dataclass(frozen=True)
class KVShape:
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    # One entry per layer: None for full attention, else the window in tokens.
    sliding_windows: tuple[int | None, ...]

    def per_layer_bytes_per_token(self, dtype_bytes: int) -> int:
        """K+V bytes one token adds to one uncapped layer."""
        return 2 * self.n_kv_heads * self.head_dim * dtype_bytes

    def bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """The textbook figure: every layer keeps every token."""
        return self.n_layers * self.per_layer_bytes_per_token(dtype_bytes)

    def cached_tokens_per_layer(self, seq_len: int) -> list[int]:
        """How many tokens each layer's cache really holds after a prefill of seq_len tokens."""
        out = []
        for window in self.sliding_windows:
            if window is None or seq_len < window:
                out.append(seq_len)
            else:
                out.append(window - 1)
        return out

    def cache_bytes(self, seq_len: int, batch_size: int = 1, dtype_bytes: int = 2) -> int:
        """Bytes the whole cache holds after a prefill, sliding-window caps applied."""
        per_tok = self.per_layer_bytes_per_token(dtype_bytes)
        return batch_size * per_tok * sum(self.cached_tokens_per_layer(seq_len))

    @property
    def has_sliding_window(self) -> bool:
        return any(w is not None for w in self.sliding_windows)


def _first(config, *names, default=None):
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def kv_shape(config) -> KVShape:
    """Read the cache geometry from a transformers config (any architecture this project loads)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_layers = int(_first(text, "num_hidden_layers", "n_layer", "num_layers"))
    n_heads = _first(text, "num_attention_heads", "n_head")
    if not n_heads:  # attention-free (Mamba, RWKV, xLSTM...): no K/V at all, its states are the facts' to count
        return KVShape(n_layers, 0, 0, 0, (None,) * n_layers)
    n_heads = int(n_heads)
    n_kv_heads = int(_first(text, "num_key_value_heads", "n_kv_heads", default=n_heads))
    hidden = int(_first(text, "hidden_size", "n_embd", "d_model"))
    head_dim = _first(text, "head_dim", default=None)
    head_dim = int(head_dim) if head_dim else hidden // n_heads

    window = _first(text, "sliding_window", default=None)
    # Qwen2 configs carry a sliding_window but switch it off with use_sliding_window=False.
    if getattr(text, "use_sliding_window", True) is False:
        window = None
    layer_types = getattr(text, "layer_types", None)
    if layer_types and window:
        windows = tuple(window if t == "sliding_attention" else None for t in layer_types)
    elif layer_types:
        windows = (None,) * n_layers
    else:
        windows = (int(window) if window else None,) * n_layers
    return KVShape(n_layers, n_heads, n_kv_heads, head_dim, windows[:n_layers])


def facts_for(loaded):
    """runner/core/model_facts.py's description of a loaded model (from its config.json), or None when the facts
    do not know its architecture. Cached on the LoadedModel."""
    cached = getattr(loaded, "_facts", False)
    if cached is not False:
        return cached

    facts = None
    raw = getattr(loaded, "raw_config", None)
    if raw is not None:
        try:
            facts = facts_from_config(raw, name=loaded.name, source=loaded.source)
        except ModelFactsError:
            facts = None
    try:
        loaded._facts = facts
    except AttributeError:
        pass
    return facts


FITS_SEQS = (4096, 32768, 131072)


def fits_rows(model: str, facts, dtype: str) -> list[dict]:
    """Analytic capacity, never measured: per GPU size (24, 80, 141, 192 GB) and tensor-parallel degree, how
    many requests of 4k, 32k and 128k tokens fit beside the weights, with 90% of the GPU planned (vLLM's
    default). Two views: transformers' layout (model_facts.cache_bytes, TP 1 only: transformers does not
    shard a cache) and the paged engine's (model_facts.fits: pages of 16 tokens, KV heads split across ranks,
    MLA latent replicated)."""
    weights = facts.weight_bytes(dtype)
    rows = []
    for gb in GPU_SIZES_GB:
        for tp in TP_SIZES:
            for seq in FITS_SEQS:
                budget = int(GPU_MEMORY_UTILIZATION * gb * 10**9) - -(-weights // tp)
                per_req = facts.cache_bytes(seq, 1, dtype) if tp == 1 else None
                engine = facts.engine_cache_bytes(seq, 1, dtype, tp)
                rows.append({
                    "model": model, "source": "formula", "dtype": dtype, "gpu_gb": gb, "tp": tp, "seq_len": seq,
                    "weight_bytes": weights, "cache_bytes_per_request": per_req,
                    "requests_transformers": (max(0, budget) // per_req) if per_req else None,
                    "engine_bytes_per_request": engine, "requests_engine": facts.fits(gb * 10**9, seq, tp, dtype),
                    "rules": f"{GPU_MEMORY_UTILIZATION:g} x GPU memory minus weights/TP; engine view: {VLLM_RULES}",
                })
    return rows
