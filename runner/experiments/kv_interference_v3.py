"""Iteration 3 (interference): does compaction slow serving down, and does running both at once save time?

Three variants timed interleaved (compact, decode, both, compact, ...) with the shared harness:
- compact: one batched gather of the live half of a KV pool (kv_compact_v2's workload and kernel);
- decode:  a few decode steps of ctx.model on a prefilled batch (a fresh copy of the prefix cache is made,
           untimed, before every call, so each call does the same work);
- both:    the two at once. GPU: on two side streams, each waiting on the default stream first; the default
           stream waits on both before the harness records its end event, so the timed region covers all
           the work on every stream. CPU: compaction in a thread beside the decode loop (torch kernels
           release the GIL), joined inside the timed region.
The alone variants run on the same side streams, so the only difference is the overlap.

Sanity bound (`check_bounds`): work on shared memory cannot finish faster than the longer of its two
parts, nor faster than its bytes over the bandwidth ceiling. A `both` faster than either part alone is
flagged (`bound_violated`), never reported as a speed-up: the seed's 903 us "compact + decode" against
1289 us "compact alone" is that pattern.
"""
from __future__ import annotations

import copy
import threading
import time

from . import Result, RunContext
from ..kv_cache import cache_bytes, forward_with_cache
from ..kv_formula import kv_shape
from ..timing import time_interleaved

NAME = "kv_interference_v3"
ITERATION = "3"
ORDER = 20
TABLES = ("kv_interference_v3",)

MIB = 1 << 20
# Live KV bytes compaction gathers (moves twice that: read + write), far beyond L2/LLC.
COMPACT_LIVE_BYTES = {("cuda", False): 2048 * MIB, ("cuda", True): 512 * MIB,
                      ("cpu", False): 128 * MIB, ("cpu", True): 64 * MIB}
# (decode batch, prefix tokens, steps, warmup, repeats)
DECODE = {("cuda", False): (8, 512, 4, 5, 40), ("cuda", True): (4, 128, 2, 3, 15),
          ("cpu", False): (4, 128, 4, 2, 10), ("cpu", True): (2, 64, 2, 1, 7)}
# Tolerances of the sanity bound, on medians. The copy roof is measured, not a physical limit: a kernel
# may beat it by a little. Perfect overlap puts `both` at the longer part's time, so noise may land it a
# little below: up to MAX_TOLERANCE is not a violation. Below bytes / theoretical peak always is.
ROOF_SLACK = 0.9
MAX_TOLERANCE = 0.05
MODES = ("compact", "decode", "both")
# Seconds the timed rounds may take; on a slow or shared machine the repeats shrink to fit, never below
# MIN_REPEATS (a median of fewer is not worth storing).
TIME_BUDGET_S = {("cuda", False): 60.0, ("cuda", True): 15.0, ("cpu", False): 30.0, ("cpu", True): 3.0}
MIN_REPEATS = 5


def check_bounds(times: dict[str, dict], bytes_moved: dict[str, int], roof_gbs: float | None,
                 peak_gbs: float | None = None) -> dict[str, dict]:
    """Per mode: the lower bound on its time (ms), whether the measurement violates it, and why.

    `both` must take at least as long as the longer part alone (median within MAX_TOLERANCE below it) and
    at least its bytes over the bandwidth ceiling (ROOF_SLACK: a measured ceiling is not a hard limit).
    The ceiling is the copy roof, or the faster part's own GB/s when that beat the roof (on a CPU a
    gather can outrun a memcpy roof: cache hits, no write-allocate reads), so the bound never rests on
    a roof the workload itself disproved. Any mode faster than its bytes over the theoretical peak is
    impossible outright. The alone modes get no roof bound of their own: their share of the roof is
    reported, not judged. `times[mode]` has median_ms (p25/p75 are ignored: on a noisy machine a wide
    spread must not hide a median that breaks the bound)."""
    alone_gbs = [bytes_moved[m] / (times[m]["median_ms"] * 1e6) for m in MODES[:2] if times[m]["median_ms"] > 0]
    ceiling_gbs = max([roof_gbs, *alone_gbs]) if roof_gbs else None
    out = {}
    for mode in MODES:
        t, b = times[mode]["median_ms"], bytes_moved[mode]
        notes = []
        bound = b / (roof_gbs * 1e6) if roof_gbs else None
        if peak_gbs and t < b / (peak_gbs * 1e6):
            notes.append(f"faster than its bytes over the theoretical peak ({b / (peak_gbs * 1e6):.3f} ms)")
        if mode == "both":
            slower = max(MODES[:2], key=lambda m: times[m]["median_ms"])
            longer = times[slower]["median_ms"]
            floor = b / (ceiling_gbs * 1e6) if ceiling_gbs else 0.0
            bound = max(longer, floor)
            if t < (1 - MAX_TOLERANCE) * longer:
                notes.append(f"faster than {slower} alone ({longer:.3f} ms)")
            if t < ROOF_SLACK * floor:
                notes.append(f"faster than its bytes over the bandwidth ceiling ({floor:.3f} ms at {ceiling_gbs:.1f} GB/s)")
        out[mode] = {"bound_ms": bound, "bound_violated": bool(notes), "bound_note": "; ".join(notes) or None}
    return out


class DecodeLoop:
    """`steps` decode steps on a prefilled cache; `reset()` restores the prefix-only cache."""

    def __init__(self, ctx: RunContext, batch: int, prefix: int, steps: int):
        self.model, self.steps, self.prefix = ctx.model, steps, prefix
        _, self.prefix_cache = forward_with_cache(ctx.model, ctx.input_ids(batch, prefix))
        self.prefix_kv_bytes = cache_bytes(self.prefix_cache)
        self.step_ids = ctx.input_ids(batch, 1)
        self.cache = None
        self.reset()

    def reset(self) -> None:
        # A fresh copy of the untouched prefix (untimed): DynamicCache grows in place, and `crop` changed
        # meaning across transformers releases (absolute length before 5.x, tokens to remove after).
        self.cache = copy.deepcopy(self.prefix_cache)

    def __call__(self) -> None:
        cache = self.cache
        for _ in range(self.steps):
            _, cache = forward_with_cache(self.model, self.step_ids, cache)
        self.cache = cache

    def bytes_read(self, weight_bytes: int) -> int:
        """Lower bound on DRAM traffic: every step reads all weights and the whole cache so far."""
        per_token = self.prefix_kv_bytes / self.prefix
        return int(sum(weight_bytes + per_token * (self.prefix + i) for i in range(self.steps)))


def _variants(ctx: RunContext, compact, decode) -> tuple[dict, str]:
    if ctx.is_cuda:
        import torch

        s_compact, s_decode = torch.cuda.Stream(ctx.device), torch.cuda.Stream(ctx.device)

        def on(streams_fns):
            cur = torch.cuda.current_stream(ctx.device)
            for stream, fn in streams_fns:
                stream.wait_stream(cur)  # start after the harness's start event
                with torch.cuda.stream(stream):
                    fn()
            for stream, _ in streams_fns:
                cur.wait_stream(stream)  # the end event is recorded after both streams finish

        return {
            "compact": lambda: on([(s_compact, compact)]),
            "decode": lambda: on([(s_decode, decode)]),
            "both": lambda: on([(s_compact, compact), (s_decode, decode)]),
        }, "cuda_streams"

    import torch

    errors: list[BaseException] = []

    def compact_in_thread():
        try:
            with torch.inference_mode():  # inference mode is thread-local; the pool tensors need it
                compact()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the timing thread below
            errors.append(exc)

    def both():
        worker = threading.Thread(target=compact_in_thread)
        worker.start()
        decode()
        worker.join()  # inside the timed region
        if errors:  # a compaction that failed in the thread must not be timed as if it ran
            raise errors[0]

    return {"compact": compact, "decode": decode, "both": both}, "threads"


def _roof_and_peak(ctx: RunContext) -> tuple[float | None, float | None]:
    try:
        from ..ceilings import roof_and_peak
    except ImportError:  # the ceilings module is missing: no roof bound, only the max(alone) one
        return None, None
    return roof_and_peak(ctx)


def run(ctx: RunContext) -> Result:
    import torch

    from .kv_compact_v2 import is_correct, make_workload, shape_for

    key = ("cuda" if ctx.is_cuda else "cpu", bool(ctx.quick))
    batch, prefix, steps, warmup, repeats = DECODE[key]
    prefix = min(prefix, ctx.max_positions - steps)  # reset() restores the prefix, so steps never accumulate
    roof, peak = _roof_and_peak(ctx)
    shape = kv_shape(ctx.config)
    live_bytes = COMPACT_LIVE_BYTES[key]
    if ctx.is_cuda:  # pool (2x live) + destination must leave room for the model's decode
        live_bytes = min(live_bytes, int(0.1 * torch.cuda.mem_get_info(ctx.device)[0]) // 3)
    n_live, seq_len = shape_for(live_bytes, shape.bytes_per_token(ctx.dtype_bytes), ctx.max_positions)
    work = make_workload(2 * shape.n_layers, n_live, shape.n_kv_heads * seq_len * shape.head_dim,
                         ctx.dtype, ctx.device)
    correct = is_correct(work, work.batched)
    ctx.progress(f"compaction of {work.kv_bytes / MIB:,.0f} MiB beside {steps} decode steps "
                 f"(batch {batch}, prefix {prefix})")
    with torch.inference_mode():
        decode = DecodeLoop(ctx, batch, prefix, steps)
        variants, concurrency = _variants(ctx, work.batched, decode)
        # One untimed round (also a warm-up) sizes the repeats to the time budget: a round runs compact,
        # decode and both, about twice the two parts.
        t0 = time.perf_counter()
        variants["compact"]()
        variants["decode"]()
        if ctx.is_cuda:
            torch.cuda.synchronize(ctx.device)
        round_s = 2 * (time.perf_counter() - t0)
        repeats = max(MIN_REPEATS, min(repeats, int(TIME_BUDGET_S[key] / round_s) - warmup))
        decode.reset()
        times = time_interleaved(variants, ctx.device, warmup=warmup, repeats=repeats,
                                 setup=lambda _name: decode.reset())
    compact_bytes = 2 * work.kv_bytes
    decode_bytes = decode.bytes_read(ctx.loaded.step_weight_bytes())
    moved = {"compact": compact_bytes, "decode": decode_bytes, "both": compact_bytes + decode_bytes}
    bounds = check_bounds({m: {"median_ms": t.median_ms, "p25_ms": t.p25_ms, "p75_ms": t.p75_ms}
                           for m, t in times.items()}, moved, roof, peak)
    rows = [{
        "mode": mode, **times[mode].columns(), "concurrency": concurrency, "bytes_moved": moved[mode],
        "gbs": moved[mode] / (times[mode].median_ms * 1e6), **bounds[mode], "roof_gbs": roof,
        "pct_of_roof": moved[mode] / (times[mode].median_ms * 1e6) / roof if roof else None,
        "peak_gbs": peak, "compact_bytes": compact_bytes, "decode_bytes": decode_bytes,
        "decode_steps": steps, "decode_batch": batch, "prefix_len": prefix, "n_requests": n_live,
        "seq_len": seq_len, "correct": correct,
    } for mode in MODES]
    del work, decode
    c, d, b = (times[m].median_ms for m in MODES)
    verdict = ("SANITY BOUND VIOLATED: " + bounds["both"]["bound_note"]) if bounds["both"]["bound_violated"] \
        else f"{b / max(c, d):.2f}x the longer alone, {b / (c + d):.2f}x their sum"
    return Result({"kv_interference_v3": rows}, [
        f"interference ({concurrency}): compact {c:.3f} ms, decode {d:.3f} ms, both {b:.3f} ms ({verdict})"])
