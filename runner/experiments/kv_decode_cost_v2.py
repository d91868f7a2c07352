"""Iteration 2 (decode): the cost of one decode step (one new token per sequence) on a prefilled cache,
across prefix lengths and batch sizes, against the device's ceilings.

Per shape: one prefill, then timed single-token steps; between repeats the cache is cut back to the
prefix (DynamicCache.crop with a negative count, which 4.4x and 5.x all accept; a deep copy of the
prefilled cache where crop is missing or misbehaves), so every repeat sees the same prefix length.

What the step must read at least: every weight once (an input embedding not tied to the output layer is
only looked up, so it is left out) plus the whole KV prefix once (attention). That over
the median step time is the achieved bandwidth. The seed read "step cost varies 3.0% from prefix 64 to
512" as "decode is DRAM-bandwidth-bound"; flat step cost is just as consistent with a step dominated by
kernel launches and Python overhead. The discriminating test is the bandwidth floor: weights / copy roof.
A bandwidth-bound step sits near that floor; a launch-bound one sits far above it (and its time also
barely moves with batch, so batch scaling alone does not decide it either).
Note: transformers' DynamicCache appends with torch.cat, which also re-reads and re-writes the prefix
every step; that traffic is real but an artefact of the cache layout, so it is not counted in bytes_read.
"""
from __future__ import annotations

import copy

from . import Result, RunContext
from ..ceilings import roof_and_peak
from ..kv_cache import cache_bytes, cache_seq_len, forward_with_cache
from ..kv_formula import kv_shape
from ..timing import time_fn

NAME = "kv_decode_cost_v2"
ITERATION = 2
ORDER = 20
TABLES = ("kv_decode_cost_v2",)
# pct_of_peak / pct_of_roof are fractions (0.42 = 42%), like every ratio kvreport stores.


def sweep(ctx: RunContext) -> list[tuple[int, int]]:
    prefixes = [32, 128] if ctx.quick else [64, 128, 256, 512, 1024, 2048]
    batches = [1, 2] if ctx.quick else [1, 4, 16]
    # The step adds one position, so prefix + 1 must fit the model's position table.
    return [(p, b) for b in batches for p in prefixes if ctx.fits(p + 1)]


class Restorer:
    """Brings a cache back to its prefilled length between timed steps."""

    def __init__(self, cache, prefix_len: int):
        self.prefix_len = prefix_len
        self.cache = cache
        self.method = "crop"
        self._pristine = None

    def use_copies(self):
        self.method = "deepcopy"
        self._pristine = copy.deepcopy(self.cache)

    def restore(self):
        if self.method == "deepcopy":
            self.cache = copy.deepcopy(self._pristine)
            return
        extra = cache_seq_len(self.cache) - self.prefix_len
        if extra > 0:
            self.cache.crop(-extra)  # negative = tokens to remove: the one spelling every release accepts
        if cache_seq_len(self.cache) != self.prefix_len:
            raise RuntimeError(f"crop left {cache_seq_len(self.cache)} tokens, expected {self.prefix_len}")


def measure(ctx: RunContext, prefix_len: int, batch: int, weight_bytes: int, roof: float, peak: float | None,
            warmup: int, repeats: int) -> dict:
    shape = kv_shape(ctx.config)
    model = ctx.model
    _, cache = forward_with_cache(model, ctx.input_ids(batch, prefix_len))
    step_ids = ctx.input_ids(batch, 1)
    rest = Restorer(cache, prefix_len)
    if not hasattr(cache, "crop"):  # legacy tuple caches are immutable: reusing the tuple is a restore
        rest.use_copies()
    kv_bytes = cache_bytes(rest.cache)
    # Growth of one step, from the tensors themselves (untimed).
    _, grown = forward_with_cache(model, step_ids, rest.cache)
    growth = cache_bytes(grown) - kv_bytes
    del grown
    if rest.method == "crop":
        try:
            rest.restore()
        except Exception:  # noqa: BLE001 - a cache class without a working negative crop: copy instead
            _, rest.cache = forward_with_cache(model, ctx.input_ids(batch, prefix_len))
            rest.use_copies()
    expected = shape.cache_bytes(prefix_len + 1, batch, ctx.dtype_bytes) - shape.cache_bytes(
        prefix_len, batch, ctx.dtype_bytes)

    t = time_fn(lambda: forward_with_cache(model, step_ids, rest.cache), ctx.device, warmup=warmup,
                repeats=repeats, setup=rest.restore)
    bytes_read = weight_bytes + kv_bytes
    achieved = bytes_read / (t.median_ms * 1e-3) / 1e9
    return {
        "prefix_len": prefix_len, "batch_size": batch, "step_ms": t.median_ms, "p25_ms": t.p25_ms,
        "p75_ms": t.p75_ms, "n": t.n, "spread_wide": t.wide, "kv_growth_bytes": growth,
        "expected_growth_bytes": expected, "growth_match": growth == expected, "bytes_read": bytes_read,
        "achieved_gbs": achieved, "pct_of_peak": achieved / peak if peak else None,
        "pct_of_roof": achieved / roof, "weight_bytes": weight_bytes, "kv_bytes": kv_bytes,
        "roof_gbs": roof, "peak_gbs": peak, "weights_floor_ms": weight_bytes / roof / 1e6,
        "bandwidth_floor_ms": bytes_read / roof / 1e6, "restore_method": rest.method,
    }


def _fits_memory(ctx: RunContext, prefix_len: int, batch: int) -> bool:
    if not ctx.is_cuda:
        return True
    import torch

    free, _ = torch.cuda.mem_get_info(ctx.device)
    kv = kv_shape(ctx.config).cache_bytes(prefix_len + 1, batch, ctx.dtype_bytes)
    logits = batch * prefix_len * ctx.vocab_size * ctx.dtype_bytes  # the prefill's logits
    return 3 * kv + logits < 0.8 * free  # cache, its torch.cat copy, a deep copy if crop is missing


def run(ctx: RunContext) -> Result:
    roof, peak = roof_and_peak(ctx)
    weight_bytes = ctx.loaded.step_weight_bytes()  # what a step streams (untied input embedding excluded)
    warmup, repeats = (5, 30) if ctx.is_cuda else ((2, 8) if ctx.quick else (2, 11))
    rows = []
    for prefix_len, batch in sweep(ctx):
        if not _fits_memory(ctx, prefix_len, batch):
            ctx.progress(f"skip prefix={prefix_len} batch={batch}: does not fit in free memory")
            continue
        ctx.progress(f"decode step prefix={prefix_len} batch={batch}")
        rows.append(measure(ctx, prefix_len, batch, weight_bytes, roof, peak, warmup, repeats))
    summary = []
    for b in sorted({r["batch_size"] for r in rows}):
        rs = [r for r in rows if r["batch_size"] == b]
        times = [r["step_ms"] for r in rs]
        summary.append(
            f"decode batch {b}: {min(times):.2f}-{max(times):.2f} ms over prefix "
            f"{rs[0]['prefix_len']}-{rs[-1]['prefix_len']} ({(max(times) - min(times)) / min(times):.1%} variation); "
            f"{rs[0]['pct_of_roof']:.1%} of the copy roof, {rs[0]['step_ms'] / rs[0]['weights_floor_ms']:.1f}x "
            f"the weights-only bandwidth floor")
    n_match = sum(r["growth_match"] for r in rows)
    summary.append(f"decode KV growth per step matches batch x formula in {n_match}/{len(rows)} shapes")
    return Result({"kv_decode_cost_v2": rows}, summary)
