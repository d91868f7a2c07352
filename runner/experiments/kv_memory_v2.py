"""Iteration 2 (memory): measure the cache tensors themselves, total and per layer.

Sums K and V tensor bytes in the cache object the model returns, so nothing else alive in memory can
leak into the number. Compared row by row with the formula (sliding-window caps included).
Publishes the measured bytes/token in ctx.shared for later experiments (crossover, audits).
"""
from __future__ import annotations

import torch

from . import Result, RunContext
from ..kv_cache import cache_bytes_per_layer, forward_with_cache
from ..kv_formula import kv_shape

NAME = "kv_memory_v2"
ITERATION = 2
ORDER = 10
TABLES = ("kv_memory_v2", "kv_per_layer")


def sweep(ctx: RunContext) -> list[tuple[int, int]]:
    seqs = [16, 64, 128] if ctx.quick else [64, 128, 256, 512, 1024, 2048]
    batches = [1, 2] if ctx.quick else [1, 4]
    return [(s, b) for b in batches for s in seqs if ctx.fits(s)]


def measure(ctx: RunContext, seq_len: int, batch: int) -> tuple[dict, list[dict]]:
    shape = kv_shape(ctx.config)
    with torch.no_grad():
        logits, cache = forward_with_cache(ctx.model, ctx.input_ids(batch, seq_len))
    del logits
    from ..kv_cache import cache_layers

    layers = cache_layers(cache)
    per_layer = cache_bytes_per_layer(cache)
    kv_bytes = sum(k + v for k, v in per_layer)
    expected = shape.cache_bytes(seq_len, batch, ctx.dtype_bytes)
    row = {
        "seq_len": seq_len, "batch_size": batch, "kv_bytes": kv_bytes,
        "bytes_per_token": kv_bytes / (seq_len * batch),
        "formula_bytes_per_token": shape.bytes_per_token(ctx.dtype_bytes),
        "expected_kv_bytes": expected,
        "cached_tokens": int(layers[0][0].shape[-2]),
        "n_layers": len(layers),
        "n_heads": shape.n_heads,
        "n_kv_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "match": kv_bytes == expected,
    }
    layer_rows = [{
        "layer": i, "seq_len": seq_len, "batch_size": batch, "k_bytes": kb, "v_bytes": vb,
        "cached_tokens": int(layers[i][0].shape[-2]), "k_shape": "x".join(map(str, layers[i][0].shape)),
    } for i, (kb, vb) in enumerate(per_layer)]
    del cache, layers
    return row, layer_rows


def run(ctx: RunContext) -> Result:
    rows, layer_rows = [], []
    for seq_len, batch in sweep(ctx):
        ctx.progress(f"cache tensors seq={seq_len} batch={batch}")
        row, per_layer = measure(ctx, seq_len, batch)
        rows.append(row)
        layer_rows.extend(per_layer)
    # Bytes/token from the longest uncapped measurement: what later experiments price tokens at.
    full = [r for r in rows if r["cached_tokens"] == r["seq_len"]] or rows
    ctx.shared["measured_bytes_per_token"] = max(full, key=lambda r: r["seq_len"])["bytes_per_token"]
    n_match = sum(r["match"] for r in rows)
    formula = rows[0]["formula_bytes_per_token"]
    return Result({"kv_memory_v2": rows, "kv_per_layer": layer_rows}, [
        f"KV cache: {ctx.shared['measured_bytes_per_token']:,.0f} B/token measured vs {formula:,} formula "
        f"({n_match}/{len(rows)} shapes match exactly)"])
