"""Decode: the cost of one decode step (one new token per sequence) on a prefilled cache, across prefix
lengths and batch sizes, in the eager, static and graph modes of runner/measure/decode_step.py. Each row holds
the step's device and host times, the bytes it must move, the bandwidth against the same-size read roof and
the bandwidth floor; a mode that fails is recorded in `skipped_modes`. Method: docs/methods/decode.md."""
from __future__ import annotations

import torch

from . import Result, RunContext
from ...core.kv_formula import kv_shape
from ..ceilings import new_roof_rows, pct_of_roof, roof_and_peak
from ..decode_step import MODES, ModeUnavailable, describe, make_decoder
from ..probes import FLUSH_FACTOR, cuda_free_bytes
from ..timing import gbs, time_fn

NAME = "decode_cost"
GROUP = "cache"
ORDER = 20
TABLES = ("decode_cost", "roof_curve")
# pct_of_peak / pct_of_roof are fractions (0.42 = 42%), like every ratio kvreport stores.


def sweep(ctx: RunContext) -> list[tuple[int, int]]:
    # The CPU default keeps a prefix span of 16x and two batches (enough to see whether the step time follows
    # the bytes) but drops batch 16 and the middle prefixes: on two cores they took ~20 CPU-minutes.
    if ctx.quick:
        prefixes, batches = [32, 128], [1, 2]
    elif ctx.is_cuda:
        prefixes, batches = [64, 128, 256, 512, 1024, 2048], [1, 4, 16]
    else:
        prefixes, batches = [64, 256, 1024], [1, 4]
    # The step adds one position, so prefix + 1 must fit the model's position table.
    return [(p, b) for b in batches for p in prefixes if ctx.fits(p + 1)]


def measure(ctx: RunContext, mode: str, prefix_len: int, batch: int, weight_bytes: int, peak: float | None,
            warmup: int, repeats: int, make_decoder=make_decoder) -> dict:
    """One row: `mode` at (prefix_len, batch). Raises ModeUnavailable when the mode cannot run here."""
    shape = kv_shape(ctx.config)
    dec = make_decoder(mode, ctx.model, ctx.input_ids(batch, prefix_len), ctx.input_ids(batch, 1), steps=1)
    expected = shape.cache_bytes(prefix_len + 1, batch, ctx.dtype_bytes) - shape.cache_bytes(
        prefix_len, batch, ctx.dtype_bytes)
    t = time_fn(dec, ctx.device, warmup=warmup, repeats=repeats, setup=dec.reset)
    kv_read = dec.kv_read_bytes()
    bytes_read = weight_bytes + kv_read
    recopy = dec.recopy_bytes()
    achieved = gbs(bytes_read, t.median_ms)
    roof = pct_of_roof(ctx, "read", bytes_read, achieved, warm=True)  # steps run back to back, unflushed
    host = t.host or t
    return {
        "mode": mode, "prefix_len": prefix_len, "batch_size": batch, "step_ms": t.median_ms, "p25_ms": t.p25_ms,
        "p75_ms": t.p75_ms, "n": t.n, "spread_wide": t.wide, **t.host_columns(),
        "kv_growth_bytes": dec.growth_bytes, "expected_growth_bytes": expected,
        "growth_match": dec.growth_bytes == expected, "bytes_read": bytes_read, "achieved_gbs": achieved,
        "pct_of_peak": achieved / peak if peak else None, **roof, "weight_bytes": weight_bytes,
        "kv_bytes": dec.kv_bytes, "kv_read_bytes": kv_read, "kv_write_bytes": dec.growth_bytes,
        "recopy_bytes": recopy, "bytes_moved": bytes_read + dec.growth_bytes + recopy, "peak_gbs": peak,
        "weights_floor_ms": weight_bytes / roof["roof_gbs"] / 1e6,
        "bandwidth_floor_ms": (bytes_read + dec.growth_bytes) / roof["roof_gbs"] / 1e6,
        "overhead_ms": host.median_ms - t.median_ms if ctx.is_cuda else None,
        "restore_method": dec.restore_method, "roof_basis": "same-size read roof",
        "dram_sized": bytes_read >= FLUSH_FACTOR * ctx.llc,
    }


def _fits_memory(ctx: RunContext, prefix_len: int, batch: int) -> bool:
    if not ctx.is_cuda:
        return True
    free, _ = cuda_free_bytes(ctx.device)
    kv = kv_shape(ctx.config).cache_bytes(prefix_len + 1, batch, ctx.dtype_bytes)
    logits = batch * prefix_len * ctx.vocab_size * ctx.dtype_bytes  # the prefill's logits
    return 3 * kv + logits < 0.8 * free  # cache, its torch.cat copy, a deep copy if crop is missing


def _settle(ctx: RunContext) -> None:
    """After a mode failed: wait for the device and hand its cached blocks back, so the next mode starts
    from a quiet device. An error here (a device the failure left unusable) is left to the next mode,
    which then records its own failure."""
    if ctx.is_cuda:
        try:
            torch.cuda.synchronize(ctx.device)
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - see the docstring
            pass


def run(ctx: RunContext, make_decoder=make_decoder) -> Result:
    """`make_decoder` (decode_step's by default) builds each mode's decoder: the tests pass one that hands
    the graph decoder a fake torch.cuda, or a static decoder a failing rewind."""
    _, peak = roof_and_peak(ctx)
    weight_bytes = ctx.loaded.step_weight_bytes()  # what a step streams (untied input embedding excluded)
    warmup, repeats = (5, 30) if ctx.is_cuda else ((1, 6) if ctx.quick else (1, 9))
    rows, skipped = [], {}
    for prefix_len, batch in sweep(ctx):
        if not _fits_memory(ctx, prefix_len, batch):
            ctx.progress(f"skip prefix={prefix_len} batch={batch}: does not fit in free memory")
            continue
        for mode in MODES:
            if mode in skipped:
                continue
            ctx.progress(f"decode step {mode} prefix={prefix_len} batch={batch}")
            try:
                rows.append(measure(ctx, mode, prefix_len, batch, weight_bytes, peak, warmup, repeats, make_decoder))
            except ModeUnavailable as why:
                skipped[mode] = str(why)
            except Exception as exc:  # noqa: BLE001 - one mode's failure is its skip; the others keep their rows
                skipped[mode] = f"failed at prefix={prefix_len} batch={batch}: {describe(exc)}"
                _settle(ctx)
    note = "; ".join(f"{m}: {why}" for m, why in skipped.items()) or None
    for r in rows:
        r["skipped_modes"] = note
    if not rows:
        raise RuntimeError("no decode shape fits in free memory")
    return Result({"decode_cost": rows, "roof_curve": new_roof_rows(ctx)}, summarize(rows, skipped))


def summarize(rows: list[dict], skipped: dict[str, str]) -> list[str]:
    out = []
    for b in sorted({r["batch_size"] for r in rows}):
        eager = [r for r in rows if r["batch_size"] == b and r["mode"] == "eager"]
        if not eager:
            continue
        times = [r["step_ms"] for r in eager]
        first = eager[0]
        others = ", ".join(f"{r['mode']} {r['step_ms']:.2f} ms ({r['step_ms'] / r['bandwidth_floor_ms']:.0f}x floor)"
                           for r in rows if r["batch_size"] == b and r["prefix_len"] == first["prefix_len"]
                           and r["mode"] != "eager")
        out.append(
            f"decode batch {b}, eager: {min(times):.2f}-{max(times):.2f} ms over prefix {eager[0]['prefix_len']}-"
            f"{eager[-1]['prefix_len']} ({(max(times) - min(times)) / min(times):.1%} variation); at prefix "
            f"{first['prefix_len']} {first['step_ms']:.2f} ms = {first['pct_of_roof']:.1%} of the same-size read "
            f"roof, {first['step_ms'] / first['bandwidth_floor_ms']:.0f}x the bandwidth floor"
            + (f"; {others}" if others else ""))
    eager = [r for r in rows if r["mode"] == "eager"]
    n_match = sum(r["growth_match"] for r in eager)
    out.append(f"decode KV growth per step matches batch x formula in {n_match}/{len(eager)} eager shapes")
    out += [f"decode {m} skipped: {why}" for m, why in skipped.items()]
    return out
