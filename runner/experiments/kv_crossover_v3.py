"""Iteration 3 (crossover): from what context length does the KV cache outweigh the model's weights?

crossover_tokens = weight bytes / (batch x KV bytes per token), in tokens per request, with weights and
cache in the same dtype (so the dtype cancels out of the token count; the byte columns carry it).
- measured: the loaded model, KV bytes/token from the cache tensors (kv_memory_v2's figure when it ran,
  else one prefill here), weight bytes from its parameters (tied embeddings counted once);
- formula: every built-in architecture, KV bytes/token from its config, weights = parameter count on the
  meta device x 2 bytes (the 16-bit dtype a GPU run uses), so a 7B model is never allocated.
Sliding-window layers stop growing at their window: the crossover is found on the capped cache size, and
is NULL when even a full window per request never reaches the weights at that batch size.
"""
from __future__ import annotations

from . import Result, RunContext
from ..kv_cache import cache_bytes, forward_with_cache
from ..kv_formula import KVShape, kv_shape
from ..models import BUILTIN, builtin_config, parameter_count

NAME = "kv_crossover_v3"
ITERATION = "3"
ORDER = 30
TABLES = ("kv_crossover_v3",)
# crossover_tokens: tokens per request at which batch x KV = weights (fractional: the exact point);
# min_tokens_kv_exceeds: the first whole token count at which KV >= weights; crossover_total_tokens:
# crossover_tokens x batch_size, the tokens held across the batch.

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
FORMULA_DTYPE_BYTES = 2
MAX_TOKENS = 1 << 48  # search limit: past this a capped (sliding-window) cache never reaches the weights


def crossover(shape: KVShape, layer_bytes_per_token: float, weight_bytes: int, batch: int
              ) -> tuple[float | None, int | None]:
    """(exact tokens per request where batch x KV == weights, first whole count where KV >= weights), or
    (None, None) when sliding windows cap the cache below the weights. KV(n) is piecewise linear in n, so
    the exact point is interpolated between the two whole counts around it."""
    def kv(n: int) -> float:
        return batch * layer_bytes_per_token * sum(shape.cached_tokens_per_layer(n))

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


def _max_positions(config) -> int | None:
    for name in ("n_positions", "max_position_embeddings"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    return None


def formula_rows(name: str) -> list[dict]:
    """Rows for one built-in architecture from its config and meta-device parameter count."""
    config = builtin_config(name)
    shape = kv_shape(config)
    params = parameter_count(name)
    dtype = "float16" if name.startswith("gpt2") else "bfloat16"  # what `--dtype auto` picks on a GPU
    return _rows(name, "formula", dtype, FORMULA_DTYPE_BYTES, shape, shape.bytes_per_token(FORMULA_DTYPE_BYTES),
                 params * FORMULA_DTYPE_BYTES, params, _max_positions(config))


def measured_bytes_per_token(ctx: RunContext) -> float:
    if "measured_bytes_per_token" in ctx.shared:
        return float(ctx.shared["measured_bytes_per_token"])
    import torch

    seq = min(128, ctx.max_positions)  # short enough to stay below any sliding window
    with torch.inference_mode():
        logits, cache = forward_with_cache(ctx.model, ctx.input_ids(1, seq))
        bpt = cache_bytes(cache) / seq
    del logits, cache
    return bpt


def run(ctx: RunContext) -> Result:
    from ..devices import dtype_name

    shape = kv_shape(ctx.config)
    seen, params = set(), 0
    for p in ctx.model.parameters():
        if p.data_ptr() not in seen:  # tied embeddings are one tensor
            seen.add(p.data_ptr())
            params += p.numel()
    rows = _rows(ctx.loaded.name, "measured", dtype_name(ctx.dtype), ctx.dtype_bytes, shape,
                 measured_bytes_per_token(ctx), ctx.loaded.weight_bytes(), params, ctx.max_positions)
    for name in BUILTIN:
        ctx.progress(f"formula crossover {name}")
        rows.extend(formula_rows(name))
    one = {(r["model"], r["source"]): r for r in rows if r["batch_size"] == 1}
    me = one[ctx.loaded.name, "measured"]
    parts = [f"{ctx.loaded.name} KV = weights at {me['crossover_tokens']:,.0f} tokens for one request (measured)"]
    for name in ("llama-2-7b", "llama-3.1-8b"):
        r = one.get((name, "formula"))
        if r:
            parts.append(f"{name} {r['crossover_tokens']:,.0f} ({r['n_kv_heads']}/{r['n_heads']} KV heads)")
    return Result({"kv_crossover_v3": rows}, ["crossover: " + "; ".join(parts)])
