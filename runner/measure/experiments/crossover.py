"""Crossover: from what context length does the KV cache outweigh the model's weights?
crossover_tokens = weight bytes / (batch x KV bytes per token). Stores a measured row for the loaded model and
a formula row for every built-in architecture the model facts describe, plus the analytic capacity table
(kv_fits_formula), written here because this experiment runs on replicas too. Method: docs/methods/crossover.md."""
from __future__ import annotations

import torch

from . import Result, RunContext, Skip
from ...core.kv_formula import KVShape, facts_for, fits_rows, kv_shape
from ...core.model_facts import ModelFactsError, dtype_bytes, load
from ..devices import dtype_name
from ..kv_cache import cache_bytes, forward_with_cache
from ..models import builtin_names, load_config

NAME = "crossover"
GROUP = "serving"
ORDER = 30
TABLES = ("crossover", "kv_fits_formula")
# crossover_tokens: tokens per request at which batch x KV = weights (fractional: the exact point);
# min_tokens_kv_exceeds: the first whole token count at which KV >= weights; crossover_total_tokens:
# crossover_tokens x batch_size, the tokens held across the batch.

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
MAX_TOKENS = 1 << 48  # search limit: past this a capped (sliding-window) cache never reaches the weights


def crossover_on(kv, weight_bytes: int) -> tuple[float | None, int | None]:
    """(exact tokens where kv(n) == weights, first whole n with kv(n) >= weights) for a non-decreasing,
    piecewise-linear kv(n); (None, None) when kv never reaches the weights (it stops growing first)."""
    if weight_bytes <= 0:
        return 0.0, 0
    hi = 1
    while kv(hi) < weight_bytes:
        hi *= 2
        if hi > MAX_TOKENS:
            return None, None
    lo = hi // 2  # kv(lo) < weights (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if kv(mid) >= weight_bytes:
            hi = mid
        else:
            lo = mid
    below, at = kv(hi - 1), kv(hi)
    return (hi - 1) + (weight_bytes - below) / (at - below), hi


def crossover(shape: KVShape, layer_bytes_per_token: float, weight_bytes: int, batch: int
              ) -> tuple[float | None, int | None]:
    """crossover_on for a K/V-only model whose layers cost layer_bytes_per_token each (sliding caps applied)."""
    return crossover_on(lambda n: batch * layer_bytes_per_token * sum(shape.cached_tokens_per_layer(n)),
                        weight_bytes)


def never_note(facts, dtype: str) -> str:
    """Why a cache never reaches the weights: every layer stops growing."""
    caps = facts.caps
    grows = facts.bytes_per_token(dtype) - sum(b for b, _cap in facts.pricing_terms(dtype)[1])
    if grows == 0:
        return (f"the cache stops growing at {max(caps) + 1 if caps else 0:,} tokens (every layer is windowed, "
                "chunked or a constant state): it never reaches the weights at this batch size")
    return "the cache never reaches the weights within 2^48 tokens"


def head_fields(config) -> dict:
    """The attention-head columns of a row, from a transformers config (None where the config has no such
    field, e.g. an SSM-only layer stack): what the page says a GQA model keeps of its heads."""
    def field(obj, name):
        try:
            return getattr(obj, name, None)
        except Exception:  # noqa: BLE001 - a per-layer field (heterogeneous configs) has no one value
            return None

    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = field(text, "num_attention_heads") or field(text, "n_head")
    kv = field(text, "num_key_value_heads") or heads
    hidden = field(text, "hidden_size")
    head_dim = field(text, "head_dim") or (hidden // heads if heads and hidden else None)
    return {"n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim}


def facts_rows(name: str, source: str, facts, dtype: str, model_build: str | None = None,
               heads: dict | None = None) -> list[dict]:
    """Rows on model_facts' real curve: cache_bytes(seq) and the analytic weight bytes."""
    weights = facts.weight_bytes(dtype)
    limit = facts.max_positions
    out = []
    for batch in BATCH_SIZES:
        exact, first = crossover_on(lambda n, batch=batch: batch * facts.cache_bytes(n, 1, dtype), weights)
        out.append({
            "model": name, "source": source, "dtype": dtype, "kv_bytes_per_token": facts.bytes_per_token(dtype),
            "weight_bytes": weights, "batch_size": batch, "crossover_tokens": exact,
            "n_layers": len(facts.layers), "parameters": facts.weight_params, "dtype_bytes": dtype_bytes(dtype),
            "min_tokens_kv_exceeds": first,
            "crossover_total_tokens": exact * batch if exact is not None else None,
            "sliding_window": (min(facts.caps) + 1) if facts.caps else None,
            "note": never_note(facts, dtype) if exact is None else None, "model_build": model_build,
            "max_positions": limit,
            "exceeds_max_positions": (exact > limit) if exact is not None and limit else None,
            **(heads or {}),
        })
    return out


def _rows(model: str, source: str, dtype: str, dtype_bytes: int, shape: KVShape, bytes_per_token: float,
          weight_bytes: int, parameters: int | None, max_positions: int | None) -> list[dict]:
    layer_bpt = bytes_per_token / shape.n_layers
    out = []
    for batch in BATCH_SIZES:
        exact, first = crossover(shape, layer_bpt, weight_bytes, batch)
        out.append({
            "model": model, "source": source, "dtype": dtype, "kv_bytes_per_token": bytes_per_token,
            "weight_bytes": weight_bytes, "batch_size": batch, "crossover_tokens": exact,
            "n_heads": shape.n_heads, "n_kv_heads": shape.n_kv_heads, "n_layers": shape.n_layers,
            "head_dim": shape.head_dim, "parameters": parameters, "dtype_bytes": dtype_bytes,
            "min_tokens_kv_exceeds": first, "crossover_total_tokens": exact * batch if exact is not None else None,
            "sliding_window": next((w for w in shape.sliding_windows if w), None),
            "max_positions": max_positions,
            "exceeds_max_positions": (exact > max_positions) if exact is not None and max_positions else None,
        })
    return out


def formula_rows(name: str) -> list[dict]:
    """Rows for one built-in architecture from model_facts (no model is built); [] where the facts do not
    describe its architecture."""
    try:
        facts = load(name)
    except ModelFactsError:
        return []
    dtype = "float16" if name.startswith("gpt2") else "bfloat16"  # what `--dtype auto` picks on a GPU

    return facts_rows(name, "formula", facts, dtype, heads=head_fields(load_config(name)[0]))


def measured_bytes_per_token(ctx: RunContext) -> float:
    if "measured_bytes_per_token" in ctx.shared:
        return float(ctx.shared["measured_bytes_per_token"])

    seq = min(128, ctx.max_positions)  # short enough to stay below any sliding window
    with torch.inference_mode():
        logits, cache = forward_with_cache(ctx.model, ctx.input_ids(1, seq))
        bpt = cache_bytes(cache) / seq
    del logits, cache
    return bpt


def run(ctx: RunContext) -> Result:
    loaded = ctx.loaded
    shape = kv_shape(loaded.full_config)
    facts = facts_for(loaded)
    dtype = dtype_name(ctx.dtype)
    if loaded.is_replica:
        if facts is None:
            raise Skip(f"{loaded.name} is a replica and runner/core/model_facts.py does not describe its "
                       "architecture: no weight bytes to compare with")
        rows = facts_rows(loaded.name, "measured", facts, dtype, loaded.build_json(), head_fields(loaded.config))
        for r in rows:
            r["note"] = ((r["note"] + "; ") if r["note"] else "") + ("replica: cache curve from the facts "
                         "(cache_tensors checks them layer by layer), weights analytic")
    else:
        seen, params = set(), 0
        for p in ctx.model.parameters():
            if p.data_ptr() not in seen:  # tied embeddings are one tensor
                seen.add(p.data_ptr())
                params += p.numel()
        rows = _rows(loaded.name, "measured", dtype, ctx.dtype_bytes, shape,
                     measured_bytes_per_token(ctx), loaded.weight_bytes(), params, ctx.max_positions)
    skipped = []
    for name in builtin_names():
        ctx.progress(f"formula crossover {name}")
        got = formula_rows(name)
        rows.extend(got)
        if not got:
            skipped.append(name)
    fits = fits_rows(loaded.name, facts, dtype) if facts is not None else []
    one = {(r["model"], r["source"]): r for r in rows if r["batch_size"] == 1}
    me = one[loaded.name, "measured"]
    where = (f"{me['crossover_tokens']:,.0f} tokens" if me["crossover_tokens"] is not None else "never")
    parts = [f"{loaded.name} KV = weights at {where} for one request (measured)"]
    for name in ("llama-2-7b", "llama-3.1-8b", "gpt-oss-120b"):
        r = one.get((name, "formula"))
        if r:
            parts.append(f"{name} " + (f"{r['crossover_tokens']:,.0f}" if r["crossover_tokens"] is not None
                                       else "never"))
    summary = ["crossover: " + "; ".join(parts)]
    if skipped:
        summary.append(f"no formula rows for {', '.join(skipped)} (runner/core/model_facts.py does not describe them)")
    return Result({"crossover": rows, "kv_fits_formula": fits}, summary)
