"""Memory: bytes per token measured from the cache tensors vs the formula, per layer, and what the
allocator delta reports instead."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kvreport.analysis import charts
from kvreport.analysis.runs import latest_per_config
from kvreport.analysis.site import PageSpec, Table


PAGE = PageSpec(slug="memory", title="Memory", order=10)


def _run_label(r) -> str:
    return f"run {r['run_id']} · {r['model']} {r['dtype']}"


@dataclass
class MemoryPage:
    match: Table
    summary: Table
    per_layer: Table
    allocator: Table | None   # allocator deltas, shown where a run measured them (alloc_chart)
    bpt_chart: object
    layer_chart: object
    alloc_chart: object | None


def context(q, site) -> MemoryPage:
    match = q("memory_formula_match")
    per_layer = q("memory_per_layer")
    allocator = q("memory_allocator_delta")
    summary = q("memory_bytes_per_token")
    # Cache sizes are exact, so older runs of one configuration would draw the same lines again; the
    # tables below still list every run.
    shown_runs = latest_per_config({r["run_id"] for r in match}, site.runs)

    # One line per run; batch sizes get a line of their own only where they differ (bytes per token of an
    # exact cache are the same at every batch, and identical lines would hide each other).
    per_batch: dict[str, dict[int, dict]] = defaultdict(lambda: defaultdict(dict))
    for r in (r for r in match if r["run_id"] in shown_runs):
        per_batch[_run_label(r)][r["batch_size"]][r["seq_len"]] = r["bytes_per_token"]
    series: dict[str, tuple[list, list]] = {}
    for label, batches in per_batch.items():
        merged: dict = {}
        for curve in batches.values():
            for x, y in curve.items():
                merged.setdefault(x, set()).add(y)
        if all(len(ys) == 1 for ys in merged.values()):  # every batch draws the same line: draw it once
            xs = sorted(merged)
            series[f"{label} · batch {', '.join(str(b) for b in sorted(batches))}"] = (
                xs, [next(iter(merged[x])) for x in xs])
        else:
            for b, curve in sorted(batches.items()):
                series[f"{label} · batch {b}"] = (sorted(curve), [curve[x] for x in sorted(curve)])
    formula_lines = sorted({(r["formula_bytes_per_token"], f"formula {r['model']} {r['dtype']}") for r in match})
    bpt_chart = charts.lines(
        "memory-bytes-per-token", dict(series), "KV bytes per token vs sequence length",
        "Measured KV-cache bytes per token for each configuration's latest run and each batch size, across "
        "sequence lengths, with the formula value drawn as a dashed line. Flat lines on the formula mean the "
        "cache grows exactly linearly.",
        "sequence length (tokens)", "bytes per token", log_x=True,
        hlines=[(v, label) for v, label in formula_lines], y_unit="bytes")

    layer_series: dict[str, tuple[list, list]] = {}
    for r in (r for r in per_layer if r["run_id"] in latest_per_config({r["run_id"] for r in per_layer}, site.runs)):
        for part in ("k", "v"):
            key = f"run {r['run_id']} {part.upper()} ({r['seq_len']:,} tokens)"
            xs, ys = layer_series.setdefault(key, ([], []))
            xs.append(r["layer"])
            ys.append(r[f"{part}_bytes"])
    layer_chart = charts.bars(
        "memory-per-layer", layer_series, "K and V bytes per layer (longest batch-1 prefill)",
        "Bytes held by the key and value tensors of each layer. Equal bars mean every layer caches the "
        "same number of tokens; shorter bars mark sliding-window layers.", "layer", "bytes", y_unit="bytes")

    alloc_chart = None
    if allocator:
        aser: dict[str, tuple[list, list]] = {}
        for r in allocator:
            for key, col in (("allocator delta after prefill", "bytes_per_token"),
                             ("after dropping logits", "cache_only_bytes_per_token")):
                k = f"{key} · run {r['run_id']} b{r['batch_size']}"
                xs, ys = aser.setdefault(k, ([], []))
                xs.append(r["seq_len"])
                ys.append(r[col])
        alloc_chart = charts.lines(
            "memory-allocator-delta", aser, "Allocator delta per token",
            "Bytes per token implied by the CUDA allocator's delta around a prefill, with and without the "
            "logits still alive, against the formula.", "sequence length (tokens)", "bytes per token",
            log_x=True, hlines=[(v, label) for v, label in formula_lines])
    csv = site.csv_files.get
    # The ids keep the names these tables' CSVs were published under (data/memory-table-<caption>.csv).
    return MemoryPage(
        summary=Table("memory-table-kv-bytes-per-token-per-run", summary, [
            ("measured_bytes_per_token", "measured per token", "bytes"), ("run_id", "run", "int"),
            ("model", "model", "text"), ("dtype", "dtype", "text"), ("device_name", "device", "text"),
            ("formula_bytes_per_token", "formula per token", "bytes"), ("ratio", "measured / formula", "ratio"),
            ("all_match", "all shapes match", "bool"), ("n_shapes", "shapes", "int")],
            caption="KV bytes per token per run", answer="measured_bytes_per_token"),
        match=Table("memory-table-measured-cache-bytes-vs-formula", match, [
            ("match", "match", "bool"), ("run_id", "run", "int"), ("model", "model", "text"),
            ("seq_len", "seq len", "int"), ("batch_size", "batch", "int"), ("cached_tokens", "cached tokens", "int"),
            ("kv_bytes", "measured", "bytes"), ("expected_kv_bytes", "formula", "bytes"),
            ("diff_bytes", "diff (B)", "int")],
            caption="Measured cache bytes vs formula", answer="match", csv=csv("cache_tensors")),
        per_layer=Table("memory-table-per-layer-bytes", per_layer, [
            ("layer", "layer", "int"), ("k_bytes", "K", "bytes"), ("v_bytes", "V", "bytes"), ("run_id", "run", "int"),
            ("seq_len", "seq len", "int"), ("cached_tokens", "cached tokens", "int"), ("k_shape", "K shape", "text")],
            caption="Per-layer bytes", csv=csv("kv_per_layer")),
        allocator=None if alloc_chart is None else Table("memory-table-allocator-deltas", allocator, [
            ("run_id", "run", "int"), ("seq_len", "seq len", "int"), ("batch_size", "batch", "int"),
            ("delta_bytes", "delta after prefill", "bytes"), ("bytes_per_token", "B/token", "num"),
            ("logits_bytes", "logits", "bytes"), ("cache_only_bytes_per_token", "B/token, logits freed", "num"),
            ("formula_bytes_per_token", "formula", "int"), ("overcount_ratio", "over-count", "ratio"),
            ("cache_only_match", "cache-only = formula", "bool")],
            caption="Allocator deltas", csv=csv("allocator_memory")),
        bpt_chart=bpt_chart, layer_chart=layer_chart, alloc_chart=alloc_chart)
