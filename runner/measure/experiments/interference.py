"""Interference: does compaction slow serving down, and does running both at once save time? Times decode,
a balanced compaction and both at once, interleaved; stores each part's times, the decode mode used, the
balance ratio, the decode inflation and compaction bandwidth lost, and the physical bound
(runner/measure/interference_bounds.py). Method: docs/methods/interference.md."""
from __future__ import annotations

import statistics
import threading
import time

import torch

from . import Result, RunContext
from ...core.kv_formula import kv_shape
from ..ceilings import new_roof_rows, pct_of_roof, roof_and_peak
from ..compaction import is_correct, make_workload, plan_for
from ..decode_step import ModeUnavailable, describe, make_decoder
from ..interference_bounds import BALANCE, MODES, check_bounds, summary_line
from ..probes import MIB, cuda_free_bytes
from ..timing import gbs, time_fn, time_interleaved

NAME = "interference"
GROUP = "serving"
ORDER = 20
TABLES = ("interference", "roof_curve")

# CPU: upper bound on the live KV bytes compaction gathers (the balance sizes it below this): on a CPU the
# cap stops a pool of several GB (seconds of allocation) when a step is slowed by other tenants.
# Each gather holds WORKLOAD_COPIES x its live bytes: 512 MiB live is 2 GiB of RAM (the quick run's 256 MiB, 1 GiB).
COMPACT_MAX_LIVE_BYTES = {("cpu", False): 512 * MIB, ("cpu", True): 256 * MIB}
# CUDA: the cap comes from free memory instead (`gpu_sizing`): a fixed 4 GiB could never balance the
# 62 GB four graph steps of llama-3.1-8b stream (balance 0.14 on an H200).
CAP_SHARE_OF_FREE = 0.6    # of the free device memory (model and decoder loaded), the workload may use this
WORKLOAD_COPIES = 4        # live bytes x this: the pool (2x live), the destination, the check's reference
STEP_HEADROOM = 0.8        # the decode part may take at most this share of the longest gather the cap allows
COMPACT_PILOT_LIVE_BYTES = {"cuda": 256 * MIB, "cpu": 8 * MIB}
# (decode batch, prefix tokens, most steps, warmup, repeats). On CUDA the steps are sized from a one-step
# pilot (`gpu_sizing`) up to this many; on a CPU one gpt2 step takes tens of ms, so one step keeps the
# balanced gather within COMPACT_MAX_LIVE_BYTES.
DECODE = {("cuda", False): (8, 512, 4, 5, 40), ("cuda", True): (4, 128, 2, 3, 15),
          ("cpu", False): (2, 128, 1, 1, 8), ("cpu", True): (1, 64, 1, 1, 7)}
DECODE_MODES = {"cuda": ("graph", "static", "eager"), "cpu": ("static", "eager")}
RESIZE_OUTSIDE = (0.6, 1.6)  # the pilot's estimate is redone once outside this
# Seconds the timed rounds may take; on a slow or shared machine the repeats shrink to fit, never below
# MIN_REPEATS (a median of fewer is not worth storing).
TIME_BUDGET_S = {("cuda", False): 60.0, ("cuda", True): 15.0, ("cpu", False): 10.0, ("cpu", True): 3.0}
MIN_REPEATS = 5


def gpu_sizing(step_ms: float, gather_ms_per_live_byte: float, free_bytes: int, max_steps: int) -> tuple[int, int]:
    """(decode steps, live-byte cap of the gather) on a GPU, from a one-step pilot of the decode part, the
    pilot gather's time per live byte and the free device memory. The cap is what free memory allows the
    workload (CAP_SHARE_OF_FREE of it, over WORKLOAD_COPIES); the steps are as many as fit (up to
    max_steps) while the decode part stays within STEP_HEADROOM of the longest gather the cap allows, so
    a balanced gather exists: an 8B model gets one or two steps, gpt2 the most."""
    cap = int(CAP_SHARE_OF_FREE * free_bytes) // WORKLOAD_COPIES
    longest_ms = cap * gather_ms_per_live_byte
    steps = max(1, min(max_steps, int(STEP_HEADROOM * longest_ms / step_ms))) if step_ms > 0 else max_steps
    return steps, cap


def cap_binds(kv_bytes: int, cap: int) -> bool:
    """The gather is at its cap (within one request's rounding): making it bigger is not possible."""
    return kv_bytes >= 0.9 * cap


def decode_bytes(dec, weight_bytes: int) -> int:
    """What the decode part moves at least: every step streams the weights, reads the KV its attention
    covers, writes its token's KV; eager also re-copies the cache (torch.cat)."""
    return dec.steps * (weight_bytes + dec.growth_bytes) + dec.kv_read_bytes() + dec.recopy_bytes()


class PartClock:
    """Times each part inside `both`: CUDA events on the part's own stream, or the thread's perf_counter."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.samples: list = []

    def run(self, fn, stream=None) -> None:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            fn()
            end.record(stream)
            self.samples.append((start, end))
            return
        t0 = time.perf_counter()
        fn()
        self.samples.append((time.perf_counter() - t0) * 1e3)

    def median_ms(self, last: int) -> float | None:
        """Median of the last `last` samples (the timed repeats; the earlier ones were warm-up)."""
        got = self.samples[-last:]
        if not got:
            return None
        if self.cuda:
            return statistics.median(float(start.elapsed_time(end)) for start, end in got)
        return statistics.median(got)


def _variants(ctx: RunContext, compact, decode) -> tuple[dict, str, PartClock, PartClock]:
    part_c, part_d = PartClock(ctx.is_cuda), PartClock(ctx.is_cuda)
    if ctx.is_cuda:
        s_compact, s_decode = torch.cuda.Stream(ctx.device), torch.cuda.Stream(ctx.device)

        def on(streams_fns):
            cur = torch.cuda.current_stream(ctx.device)
            for stream, fn, clock in streams_fns:
                stream.wait_stream(cur)  # start after the harness's start event
                with torch.cuda.stream(stream):
                    if clock is None:
                        fn()
                    else:
                        clock.run(fn, stream)
            for stream, _, _ in streams_fns:
                cur.wait_stream(stream)  # the end event is recorded after both streams finish

        return {
            "compact": lambda: on([(s_compact, compact, None)]),
            "decode": lambda: on([(s_decode, decode, None)]),
            "both": lambda: on([(s_compact, compact, part_c), (s_decode, decode, part_d)]),
        }, "cuda_streams", part_c, part_d

    errors: list[BaseException] = []

    def compact_in_thread():
        try:
            with torch.inference_mode():  # inference mode is thread-local; the pool tensors need it
                part_c.run(compact)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the timing thread below
            errors.append(exc)

    def both():
        worker = threading.Thread(target=compact_in_thread)
        worker.start()
        part_d.run(decode)
        worker.join()  # inside the timed region
        if errors:  # a compaction that failed in the thread must not be timed as if it ran
            raise errors[0]

    return {"compact": compact, "decode": decode, "both": both}, "threads", part_c, part_d


def balanced_workload(ctx: RunContext, decode_ms: float, progress=None, time_gather=None,
                      start_live: int | None = None, cap: int | None = None):
    """A compaction workload whose batched gather takes about `decode_ms`: a pilot measures the gather's
    rate, the size follows from it, and up to two resizes correct a pilot that missed (a rate that
    changes with size: caches, launch overhead). Never above `cap` live bytes (default: the CPU's fixed
    cap). `time_gather(workload) -> ms` is injectable for tests."""
    time_gather = time_gather or (lambda w: time_fn(w.batched, ctx.device, warmup=1, repeats=5).median_ms)
    shape = kv_shape(ctx.config)
    kind = "cuda" if ctx.is_cuda else "cpu"
    if cap is None:
        cap = COMPACT_MAX_LIVE_BYTES["cpu", bool(ctx.quick)]
    live = min(cap, start_live or COMPACT_PILOT_LIVE_BYTES[kind])
    work, compact_ms = None, None
    for _attempt in range(3):
        plan = plan_for(live, shape, ctx.dtype_bytes, ctx.max_positions)
        del work
        work = make_workload(plan.n_tensors, plan.n_live, plan.row, ctx.dtype, ctx.device)
        compact_ms = time_gather(work)
        ratio = compact_ms / decode_ms
        if progress:
            progress(f"compaction of {work.kv_bytes / MIB:,.1f} MiB: {compact_ms:.3f} ms = {ratio:.2f}x decode")
        if RESIZE_OUTSIDE[0] <= ratio <= RESIZE_OUTSIDE[1] or (ratio < 1 and cap_binds(work.kv_bytes, cap)):
            break
        live = int(min(cap, max(64 << 10, work.kv_bytes / ratio)))
    return work, compact_ms


def timed_rounds(ctx: RunContext, work, decode, key, warmup: int, repeats: int):
    """(times per variant, concurrency, compaction's and decode's clocks inside `both`): the three
    variants timed interleaved, their repeats shrunk to the time budget."""
    variants, concurrency, part_c, part_d = _variants(ctx, work.batched, decode)
    # One untimed round (also a warm-up) sizes the repeats to the time budget: a round runs compact,
    # decode and both, about twice the two parts.
    decode.reset()
    t0 = time.perf_counter()
    variants["compact"]()
    variants["decode"]()
    if ctx.is_cuda:
        torch.cuda.synchronize(ctx.device)
    round_s = 2 * (time.perf_counter() - t0)
    repeats = max(MIN_REPEATS, min(repeats, int(TIME_BUDGET_S[key] / max(round_s, 1e-6)) - warmup))
    decode.reset()
    times = time_interleaved(variants, ctx.device, warmup=warmup, repeats=repeats, setup=lambda _name: decode.reset())
    return times, concurrency, part_c, part_d


def _settle(ctx: RunContext) -> None:
    """Wait for the device and hand cached blocks back (after a pilot, or a mode that failed)."""
    if ctx.is_cuda:
        torch.cuda.synchronize(ctx.device)
        torch.cuda.empty_cache()


def _settle_after_failure(ctx: RunContext) -> None:
    """_settle, where an error means the failure left the device unusable: the next mode then records
    its own failure, which says so."""
    try:
        _settle(ctx)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def _decode_part(ctx: RunContext, mode: str, batch: int, prefix: int, max_steps: int, make_decoder=make_decoder,
                 free_bytes=cuda_free_bytes, settle=_settle, pilot_live_bytes=COMPACT_PILOT_LIVE_BYTES["cuda"]):
    """(decoder, its pilot ms, live-byte cap of the gather, the gather's ms per live byte or None) for
    `mode`: on a GPU a one-step pilot and a pilot gather of `pilot_live_bytes` size the steps and the cap
    from free memory (`free_bytes(device)`, after `settle(ctx)`: `gpu_sizing`); on a CPU max_steps steps
    and the fixed cap. The probes and the pilot's size are parameters so that a CPU test can drive the
    GPU branch with a fake free memory and a small pilot."""
    def build(steps):
        return make_decoder(mode, ctx.model, ctx.input_ids(batch, prefix), ctx.input_ids(batch, 1), steps)

    def pilot(dec):
        return time_fn(dec, ctx.device, warmup=2, repeats=5, setup=dec.reset).median_ms

    if not ctx.is_cuda:
        dec = build(max_steps)
        return dec, pilot(dec), COMPACT_MAX_LIVE_BYTES["cpu", bool(ctx.quick)], None
    dec = build(1)
    step_ms = pilot(dec)
    plan = plan_for(pilot_live_bytes, kv_shape(ctx.config), ctx.dtype_bytes, ctx.max_positions)
    work = make_workload(plan.n_tensors, plan.n_live, plan.row, ctx.dtype, ctx.device)
    gather_ms = time_fn(work.batched, ctx.device, warmup=1, repeats=5).median_ms
    per_byte, live_gibs = gather_ms / work.kv_bytes, work.kv_bytes / (1 << 30) / (gather_ms * 1e-3)
    del work
    settle(ctx)
    steps, cap = gpu_sizing(step_ms, per_byte, free_bytes(ctx.device)[0], max_steps)
    ctx.progress(f"pilot: one {mode} step {step_ms:.3f} ms, gather {live_gibs:,.0f} GiB/s live: "
                 f"{steps} step(s), gather cap {cap / MIB:,.0f} MiB live")
    if steps != 1:
        del dec
        settle(ctx)
        dec = build(steps)
    return dec, pilot(dec), cap, per_byte


def _measure(ctx: RunContext, mode: str, key, make_decoder=make_decoder) -> dict:
    """Every measurement of the experiment with the decode part in `mode`; raises on any failure."""
    batch, prefix, max_steps, warmup, repeats = DECODE[key]
    prefix = min(prefix, ctx.max_positions - max_steps)  # reset() restores the prefix: steps never accumulate
    decode, decode_pilot, cap, per_byte = _decode_part(ctx, mode, batch, prefix, max_steps, make_decoder)
    ctx.progress(f"decode part: {decode.steps} {decode.mode} steps (batch {batch}, prefix {prefix}) "
                 f"{decode_pilot:.3f} ms")
    start = int(decode_pilot / per_byte) if per_byte else None  # GPU: the pilot gather's rate says the size
    work, _ = balanced_workload(ctx, decode_pilot, ctx.progress, start_live=start and max(64 << 10, start), cap=cap)
    times, concurrency, part_c, part_d = timed_rounds(ctx, work, decode, key, warmup, repeats)
    ratio = times["compact"].median_ms / times["decode"].median_ms
    if not BALANCE[0] <= ratio <= BALANCE[1]:  # the pilot missed (a rate that changed): resize once
        if ratio < BALANCE[0] and cap_binds(work.kv_bytes, cap):
            ctx.progress(f"compact / decode = {ratio:.2f}x with the gather at its {cap / MIB:,.0f} MiB cap: "
                         "not resized (recorded as unbalanced)")
        else:
            ctx.progress(f"compact / decode = {ratio:.2f}x, outside {BALANCE[0]}-{BALANCE[1]}x: resizing from the "
                         "timed medians")
            start = int(work.kv_bytes / ratio)  # the size at the measured rate that matches the decode part
            del work
            work, _ = balanced_workload(ctx, times["decode"].median_ms, ctx.progress,
                                        start_live=max(64 << 10, start), cap=cap)
            times, concurrency, part_c, part_d = timed_rounds(ctx, work, decode, key, warmup, repeats)
    correct = is_correct(work, work.batched)
    if ctx.is_cuda:
        torch.cuda.synchronize(ctx.device)  # an asynchronous failure surfaces here, inside this mode's guard
    return dict(decode=decode, work=work, times=times, concurrency=concurrency, part_c=part_c, part_d=part_d,
                correct=correct, cap=cap, batch=batch, prefix=prefix)


def run(ctx: RunContext, modes: tuple[str, ...] | None = None, make_decoder=make_decoder) -> Result:
    """`modes`: the decode modes to try, fastest first (default: DECODE_MODES for the device);
    `make_decoder` builds each (decode_step's by default; the tests pass one with a fake torch.cuda)."""
    key = ("cuda" if ctx.is_cuda else "cpu", bool(ctx.quick))
    _, peak = roof_and_peak(ctx)
    # graph, then static, then eager: a mode that fails anywhere (set-up, pilot, timed rounds) hands over to
    # the next one, and why is recorded (`decode_fallback`).
    slower_modes: list[str] = []
    got = None
    with torch.inference_mode():
        for mode in modes or DECODE_MODES[key[0]]:
            try:
                got = _measure(ctx, mode, key, make_decoder)
                break
            except ModeUnavailable as exc:
                slower_modes.append(f"{mode}: {exc}")
            except Exception as exc:  # noqa: BLE001 - this mode's failure; the next mode may still run
                slower_modes.append(f"{mode}: failed: {describe(exc)}")
            _settle_after_failure(ctx)
    if got is None:
        raise RuntimeError("no decode mode ran: " + "; ".join(slower_modes))
    decode, work, times = got["decode"], got["work"], got["times"]
    concurrency, part_c, part_d, correct = got["concurrency"], got["part_c"], got["part_d"], got["correct"]
    batch, prefix, steps = got["batch"], got["prefix"], decode.steps
    compact_bytes = work.bytes_moved
    dec_bytes = decode_bytes(decode, ctx.loaded.step_weight_bytes())
    moved = {"compact": compact_bytes, "decode": dec_bytes, "both": compact_bytes + dec_bytes}
    bounds = check_bounds({m: {"median_ms": t.median_ms, "p25_ms": t.p25_ms, "p75_ms": t.p75_ms}
                           for m, t in times.items()}, moved, ctx.shared.get("copy_roof_gbs"), peak)
    c, d, b = (times[m].median_ms for m in MODES)
    c_in, d_in = part_c.median_ms(times["both"].n), part_d.median_ms(times["both"].n)
    balance = c / d
    shared = {
        "concurrency": concurrency, "peak_gbs": peak, "compact_bytes": compact_bytes, "decode_bytes": dec_bytes,
        "decode_steps": steps, "decode_batch": batch, "prefix_len": prefix, "n_requests": work.pool.shape[1] // 2,
        "seq_len": work.pool.shape[2] // (kv_shape(ctx.config).n_kv_heads * kv_shape(ctx.config).head_dim),
        "correct": correct, "decode_mode": decode.mode, "decode_in_both_ms": d_in, "compact_in_both_ms": c_in,
        "balance_ratio": balance, "balanced": BALANCE[0] <= balance <= BALANCE[1],
        "compact_cap_bytes": got["cap"], "decode_fallback": "; ".join(slower_modes) or None,
        "decode_inflation": d_in / d if d_in else None, "compact_bw_lost": 1 - c / c_in if c_in else None,
    }
    # Compaction is a copy: its share is of the copy roof of the same size (warm: the variants run back to
    # back without a flush). Decode and both mix reads of one size with writes of another, so no same-size
    # same-op roof exists for them: their share of roof stays NULL (the sanity bound uses the headline roof).
    compact_gbs = gbs(compact_bytes, times["compact"].median_ms)
    compact_roof = pct_of_roof(ctx, "copy", compact_bytes, compact_gbs, warm=True)
    no_roof = {"roof_gbs": None, "pct_of_roof": None, "over_roof": None}
    rows = [{
        "mode": mode, **times[mode].columns(), "host_ms": (times[mode].host or times[mode]).median_ms,
        "bytes_moved": moved[mode], "gbs": gbs(moved[mode], times[mode].median_ms), **bounds[mode],
        **(compact_roof if mode == "compact" else no_roof), **shared,
    } for mode in MODES]
    work_kv_bytes = work.kv_bytes
    del work, decode
    summary = [summary_line(c, d, b, bounds["both"], shared)]
    if not shared["balanced"] and cap_binds(work_kv_bytes, got["cap"]):
        summary.append(f"interference: the gather is at its {got['cap'] / MIB:,.0f} MiB cap (from free memory); "
                       "a balanced one does not fit")
    if slower_modes:
        summary.append("interference decode mode fallbacks: " + "; ".join(slower_modes))
    return Result({"interference": rows, "roof_curve": new_roof_rows(ctx)}, summary)
