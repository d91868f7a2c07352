"""Memory: measure the cache tensors themselves, total and per layer, against the model facts (or the K/V
formula where the facts do not know the architecture), at lengths below, at and above every window and chunk.
Publishes the measured bytes/token in ctx.shared for later experiments (crossover, audits).
Method: docs/methods/memory.md."""
from __future__ import annotations

import torch
import transformers

from . import Result, RunContext
from ...core.kv_formula import facts_for, kv_shape
from ..devices import dtype_name
from ..kv_cache import forward_with_cache, read_cache, storage_bytes

NAME = "cache_tensors"
GROUP = "cache"
ORDER = 10
TABLES = ("cache_tensors", "kv_per_layer")
# Around a window or chunk of W tokens the cache holds min(seq, W-1): W-1, W and W+1 show the cap start.
# Caps past these lengths are left out (a prefill that long is minutes on a CPU); a replica skips the
# attention arithmetic, so it reaches further.
CAP_LIMIT = {(False, False): 16384, (False, True): 1024, (True, False): 16384, (True, True): 9000}


def sweep(ctx: RunContext) -> list[tuple[int, int]]:
    seqs = [16, 64, 128] if ctx.quick else [64, 128, 256, 512, 1024, 2048]
    facts = facts_for(ctx.loaded)
    limit = CAP_LIMIT[ctx.loaded.is_replica, bool(ctx.quick)]
    if facts is not None:
        for cap in facts.caps:  # cap = window - 1
            seqs += [s for s in (cap, cap + 1, cap + 2) if s <= limit]
    seqs = sorted(set(seqs))
    batches = [1, 2] if ctx.quick else [1, 4]
    return [(s, b) for b in batches for s in seqs if ctx.fits(s)]


def _kind_of(layer) -> str:
    if layer.keys is None and not layer.states:
        return "none"
    if layer.keys is None:
        return "state"
    return "attention+state" if layer.states else "attention"


def measure_layers(loaded, input_ids) -> tuple[list[dict], int]:
    """One prefill: per layer of the full model, the bytes its cache holds; and the storage bytes the cache
    pins. A one-layer-per-kind replica's built layers stand for the layers of their kind (layer_map)."""
    with torch.no_grad():
        logits, cache = forward_with_cache(loaded.model, input_ids)
    del logits
    built = read_cache(cache)
    pinned = storage_bytes([t for layer in built for t in layer.tensors()])
    layer_map = loaded.layer_map or list(range(len(built)))
    if loaded.layer_map:
        # The built prefix is counted once per layer it stands for, its storage likewise.
        uses = [layer_map.count(j) for j in range(len(built))]
        pinned = sum(storage_bytes(layer.tensors()) * uses[j] for j, layer in enumerate(built))
    out = []
    for i, j in enumerate(layer_map):
        layer = built[j]
        out.append({
            "layer": i, "measured_as_layer": j, "layer_class": layer.layer_class, "measured_kind": _kind_of(layer),
            "k_bytes": layer.k_bytes, "v_bytes": layer.v_bytes, "state_bytes": layer.state_bytes,
            "bytes": layer.total_bytes, "cached_tokens": layer.cached_tokens,
            "k_shape": "x".join(map(str, layer.keys.shape)) if layer.keys is not None else None,
        })
    del cache, built
    return out, pinned


def _mla_layout(facts, layers: list[dict], seq_len: int, batch: int, dtype: str):
    """For an MLA model: the layout (latent or per-head) whose bytes the measurement matches, and the facts
    in that layout. The transformers version decides, so the measurement does, never an assumption."""
    if not facts.mla_layouts:
        return facts, None
    for layout in facts.mla_layouts:
        f = facts.with_mla_layout(layout)
        if all(f.layer_cache_bytes(r["layer"], seq_len, batch, dtype)["bytes"] == r["bytes"] for r in layers):
            return f, layout
    return facts, "neither"


def measure(ctx: RunContext, seq_len: int, batch: int) -> tuple[dict, list[dict]]:
    loaded = ctx.loaded
    dtype = dtype_name(ctx.dtype)
    layers, pinned = measure_layers(loaded, ctx.input_ids(batch, seq_len))
    facts = facts_for(loaded)
    mla_layout = None
    if facts is not None:
        facts, mla_layout = _mla_layout(facts, layers, seq_len, batch, dtype)
        expected = [facts.layer_cache_bytes(r["layer"], seq_len, batch, dtype) for r in layers]
        expected_total, expected_source = facts.cache_bytes(seq_len, batch, dtype), "model_facts"
        formula_bpt = facts.bytes_per_token(dtype)
    else:  # an architecture the facts do not describe: the K/V formula, K/V layers only
        shape = kv_shape(loaded.full_config)
        per_layer = shape.per_layer_bytes_per_token(ctx.dtype_bytes)
        tokens = shape.cached_tokens_per_layer(seq_len)
        expected = [{"kind": "full" if w is None else "sliding", "bytes": batch * per_layer * t}
                    for w, t in zip(shape.sliding_windows, tokens)]
        expected_total, expected_source = shape.cache_bytes(seq_len, batch, ctx.dtype_bytes), "kv_formula"
        formula_bpt = shape.bytes_per_token(ctx.dtype_bytes)
    kv_bytes = sum(r["bytes"] for r in layers)
    shape = kv_shape(loaded.full_config)
    held = [r["cached_tokens"] for r in layers if r["cached_tokens"] is not None]
    row = {
        "seq_len": seq_len, "batch_size": batch, "kv_bytes": kv_bytes,
        "bytes_per_token": kv_bytes / (seq_len * batch),
        "formula_bytes_per_token": formula_bpt,
        "expected_kv_bytes": expected_total,
        "cached_tokens": max(held) if held else None,
        "n_layers": len(layers),
        "n_heads": shape.n_heads,
        "n_kv_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "match": kv_bytes == expected_total,
        "k_bytes": sum(r["k_bytes"] for r in layers), "v_bytes": sum(r["v_bytes"] for r in layers),
        "state_bytes": sum(r["state_bytes"] for r in layers), "storage_bytes": pinned,
        "expected_source": expected_source, "mla_layout": mla_layout,
        "layers_built": len(set(r["measured_as_layer"] for r in layers)),
        "model_build": loaded.build_json(), "transformers_version": transformers.__version__,
    }
    layer_rows = []
    for r, e in zip(layers, expected):
        layer_rows.append({
            "layer": r["layer"], "seq_len": seq_len, "batch_size": batch, "k_bytes": r["k_bytes"],
            "v_bytes": r["v_bytes"], "cached_tokens": r["cached_tokens"], "k_shape": r["k_shape"],
            "kind": e["kind"] if facts is not None else r["measured_kind"], "layer_class": r["layer_class"],
            "state_bytes": r["state_bytes"], "expected_bytes": e["bytes"], "match": r["bytes"] == e["bytes"],
            "measured_as_layer": r["measured_as_layer"],
        })
    return row, layer_rows


def run(ctx: RunContext) -> Result:
    rows, layer_rows = [], []
    for seq_len, batch in sweep(ctx):
        ctx.progress(f"cache tensors seq={seq_len} batch={batch}")
        row, per_layer = measure(ctx, seq_len, batch)
        rows.append(row)
        layer_rows.extend(per_layer)
    # Bytes/token from the longest measurement below every cap: what later experiments price tokens at
    # (constant states included, so on a hybrid model it is a per-token average at that length).
    full = [r for r in rows if r["cached_tokens"] == r["seq_len"]] or rows
    headline = max(full, key=lambda r: r["seq_len"])
    ctx.shared["measured_bytes_per_token"] = headline["bytes_per_token"]
    n_match = sum(r["match"] for r in rows)
    n_layer_match = sum(r["match"] for r in layer_rows)
    # the expected figure of the same measurement, so the line and the rows say the same (a per-token average
    # with states and caps, as measured; formula_bytes_per_token stays in the rows as the uncapped growth)
    formula = headline["expected_kv_bytes"] / (headline["seq_len"] * headline["batch_size"])
    built = f"; replica: {ctx.loaded.replica['instantiated']}" if ctx.loaded.is_replica else ""
    return Result({"cache_tensors": rows, "kv_per_layer": layer_rows}, [
        f"KV cache: {ctx.shared['measured_bytes_per_token']:,.0f} B/token measured vs {formula:,.0f} formula "
        f"({n_match}/{len(rows)} shapes and {n_layer_match}/{len(layer_rows)} layer rows match exactly, "
        f"against {rows[0]['expected_source']}{built})"])
