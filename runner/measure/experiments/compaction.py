"""Compaction: gather the live requests' KV caches into contiguous memory, from well under 1 MB to 4 GiB live
on a GPU, by every method of runner/measure/compaction.py, timed cold and interleaved with the copy roof of
the same size. Fills `compaction` rows with device and host times, bandwidth against that roof and the
peak, and the `dram_sized`, `over_roof` and `correct` flags. Method: docs/methods/compaction.md."""
from __future__ import annotations

from . import Result, RunContext
from ..ceilings import OVER_ROOF, new_roof_rows, record_roof, roof_and_peak, roof_kernel, roof_row
from ..compaction import METHODS, checked_methods, make_workload, planned_workloads
from ..probes import FLUSH_FACTOR, MIB, Flusher
from ..timing import gbs, time_interleaved

NAME = "compaction"
GROUP = "cache"
ORDER = 40
TABLES = ("compaction", "roof_curve")
ROOF = "copy roof"  # the roof's name among the interleaved variants
# pct_of_peak / pct_of_roof are fractions (0.42 = 42%). kv_bytes = live KV bytes gathered = bytes_moved / 2.


def run(ctx: RunContext) -> Result:
    _, peak = roof_and_peak(ctx)
    warmup, repeats = (5, 30) if ctx.is_cuda else ((1, 6) if ctx.quick else (2, 10))
    flusher = Flusher(ctx.device, ctx.llc)
    rows, skipped_any = [], {}
    plans = planned_workloads(ctx)
    if not plans:
        raise RuntimeError("no compaction size fits in free memory")
    for plan in plans:
        w = make_workload(plan.n_tensors, plan.n_live, plan.row, ctx.dtype, ctx.device)
        ctx.progress(f"compaction {plan.n_live} x {plan.seq_len} tokens ({w.kv_bytes / MIB:,.2f} MiB live)")
        methods, correct, skipped = checked_methods(w, METHODS)
        skipped_any.update(skipped)
        flush = flusher.needed(w.bytes_moved)
        # The same-size copy roof is one more variant of the interleaved rounds (naive, batched, ..., roof,
        # naive, ...): whatever slows the machine down slows the roof alike, so drift between two separate
        # measurements cannot put a gather above its roof.
        roof_fn, roof_moved = roof_kernel(ctx.device, "copy", w.bytes_moved)
        times = time_interleaved({**methods, ROOF: roof_fn}, ctx.device, warmup=warmup, repeats=repeats,
                                 setup=flusher if flush else None)
        del roof_fn
        roof = roof_row(ctx.device, "copy", w.bytes_moved, roof_moved, [times.pop(ROOF)], flusher.llc, flush, NAME)
        record_roof(ctx, roof)
        for method, t in times.items():
            rate = gbs(w.bytes_moved, t.median_ms)
            pct = rate / roof["gbs"]
            rows.append({
                "method": method, "bytes_moved": w.bytes_moved, **t.columns(), **t.host_columns(), "gbs": rate,
                "pct_of_peak": rate / peak if peak else None, "roof_gbs": roof["gbs"], "pct_of_roof": pct,
                "over_roof": pct > OVER_ROOF,
                "correct": correct[method], "n_requests": plan.n_live, "seq_len": plan.seq_len,
                "kv_bytes": w.kv_bytes, "n_slots": w.pool.shape[1], "launches": w.launches(method),
                "peak_gbs": peak, "cache_flushed": flush, "llc_bytes": flusher.llc,
                "dram_sized": w.bytes_moved >= FLUSH_FACTOR * flusher.llc,
                "element_bytes": w.element_bytes(method),
                "skipped_methods": "; ".join(f"{k}: {v}" for k, v in skipped.items()) or None,
                "roof_basis": "same-size copy roof",
            })
        del w
    del flusher
    return Result({"compaction": rows, "roof_curve": new_roof_rows(ctx)}, summarize(rows, skipped_any))


def summarize(rows: list[dict], skipped: dict[str, str]) -> list[str]:
    big = max(r["bytes_moved"] for r in rows)
    small = min(r["bytes_moved"] for r in rows)
    pick = {(r["method"], r["bytes_moved"]): r for r in rows}
    at_big = ", ".join(f"{m} {pick[m, big]['gbs']:,.1f} GB/s ({pick[m, big]['pct_of_roof']:.0%})"
                       for m in METHODS if (m, big) in pick)
    lines = [
        f"compaction at {big / 1e6:,.0f} MB moved, % of the same-size copy roof: {at_big}; at {small / 1e6:,.2f} MB "
        f"batched is {pick['naive', small]['time_ms'] / pick['batched', small]['time_ms']:.1f}x faster than naive; "
        f"all correct: {all(r['correct'] for r in rows)}"]
    over = [r for r in rows if r["over_roof"]]
    if over:
        lines.append(f"compaction: {len(over)} row(s) above 105% of their roof, flagged as measurement errors")
    lines += [f"compaction {m} skipped: {why}" for m, why in skipped.items()]
    return lines
