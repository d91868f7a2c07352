"""Iteration 2 (compaction): gather the live requests' KV caches into contiguous memory, from well under
1 MB to over 1 GB, two ways, against the copy roof and the theoretical peak.

The pool holds every layer's K and V for `slots` requests of `seq_len` tokens in the model's real cache
geometry ([2 x layers, slots, kv_heads x seq_len x head_dim]); half the slots are evicted (random, fixed
seed) and compaction gathers the live half into a fresh [2 x layers, live, ...] buffer.
- naive:   one index_select per layer per tensor (2 x layers launches), in the model dtype, like the seed.
- batched: one index_select over all layers at once: the pool seen as rows of 8-byte words and one flat
           row index, so a single kernel moves every byte, with wider loads.
Both move the same bytes: live bytes read + the same written. Each timed call starts cold: if the pool
and destination together are smaller than FLUSH_FACTOR x the last-level cache, a buffer that size is
overwritten before the call (untimed), so small sizes measure DRAM, not L2/LLC. The two methods are
timed interleaved (A B A B). `correct` is checked on random data with the destination poisoned (NaN).
"""
from __future__ import annotations

import torch

from . import Result, RunContext
from ..ceilings import MIB, roof_and_peak
from ..kv_formula import kv_shape
from ..timing import time_interleaved

NAME = "kv_compact_v2"
ITERATION = 2
ORDER = 40
TABLES = ("kv_compact_v2",)
# pct_of_peak / pct_of_roof are fractions (0.42 = 42%). kv_bytes = live KV bytes gathered = bytes_moved / 2.

KIB = 1 << 10
GPU_TARGETS = [64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]
CPU_TARGETS = [64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB]  # 128 MB moved at most: CPU time
CPU_TARGETS_QUICK = [64 * KIB, MIB, 32 * MIB]
FLUSH_FACTOR = 4
SEED = 1234


class Workload:
    """pool [2L, slots, row] in the model dtype; idx: the live slots (sorted, on the device);
    dst [2L, live, row]. Views are made once here so the timed calls do only the launches."""

    def __init__(self, pool: torch.Tensor, idx: torch.Tensor):
        n_tensors, slots, row = pool.shape
        self.pool, self.idx = pool, idx
        self.dst = torch.empty(n_tensors, len(idx), row, dtype=pool.dtype, device=pool.device)
        self._pairs = [(pool[j], self.dst[j]) for j in range(n_tensors)]
        # Row j * slots + i of the pool seen as [2L * slots, row] is slot i of tensor j.
        self.flat_idx = (torch.arange(n_tensors, device=pool.device)[:, None] * slots + idx[None, :]).reshape(-1)
        self._src_rows, self._dst_rows = _wide_rows(pool), _wide_rows(self.dst)

    @property
    def kv_bytes(self) -> int:
        return self.dst.numel() * self.dst.element_size()

    def naive(self) -> None:
        for src, dst in self._pairs:
            torch.index_select(src, 0, self.idx, out=dst)

    def batched(self) -> None:
        torch.index_select(self._src_rows, 0, self.flat_idx, out=self._dst_rows)

    def expected(self) -> torch.Tensor:
        # Reference by advanced indexing: a different code path from both methods.
        return self.pool[:, self.idx]


def _wide_rows(t: torch.Tensor) -> torch.Tensor:
    """t [a, b, row] as [a * b, words] of the widest integer type dividing a row: same bytes, fewer and
    wider elements per thread."""
    rows = t.view(t.shape[0] * t.shape[1], t.shape[2])
    row_bytes = t.shape[2] * t.element_size()
    for wide in (torch.int64, torch.int32, torch.int16):
        if row_bytes % wide.itemsize == 0 and wide.itemsize >= t.element_size():
            return rows.view(wide)
    return rows


def make_workload(n_tensors: int, n_live: int, row: int, dtype, device, seed: int = SEED) -> Workload:
    """A pool of 2 x n_live slots, half of them evicted at random (fixed seed), holding random data."""
    slots = 2 * n_live
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    pool = torch.empty(n_tensors, slots, row, dtype=dtype, device=device).normal_(generator=g)
    idx = torch.randperm(slots, generator=torch.Generator().manual_seed(seed))[:n_live].sort().values
    return Workload(pool, idx.to(device))


def is_correct(w: Workload, method) -> bool:
    """Poison the destination, run `method` once, compare exactly with the reference gather."""
    w.dst.fill_(float("nan"))
    method()
    return bool(torch.equal(w.dst, w.expected()))


def shape_for(target_bytes: int, bytes_per_token: int, max_seq: int) -> tuple[int, int]:
    """(live requests, seq_len) whose live KV is close to target_bytes: 512-token requests (or the model's
    limit), fewer tokens in one request below that."""
    seq_cap = min(512, max_seq)
    tokens = max(1, round(target_bytes / bytes_per_token))
    if tokens < seq_cap:
        return 1, tokens
    return max(1, round(tokens / seq_cap)), seq_cap


def last_level_cache_bytes(device) -> int:
    if device.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * MIB)
    best = 0
    try:
        from pathlib import Path

        for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
            text = f.read_text().strip().upper()
            mult = {"K": KIB, "M": MIB}.get(text[-1], 1)
            best = max(best, int(text.rstrip("KM")) * mult)
    except (OSError, ValueError):
        pass
    return best or 32 * MIB


def run(ctx: RunContext) -> Result:
    roof, peak = roof_and_peak(ctx)
    shape = kv_shape(ctx.config)
    n_tensors = 2 * shape.n_layers
    bpt = shape.bytes_per_token(ctx.dtype_bytes)
    targets = GPU_TARGETS if ctx.is_cuda else (CPU_TARGETS_QUICK if ctx.quick else CPU_TARGETS)
    warmup, repeats = (5, 30) if ctx.is_cuda else ((2, 8) if ctx.quick else (3, 15))
    llc = last_level_cache_bytes(ctx.device)
    flush_buf = torch.empty(FLUSH_FACTOR * llc // 4, dtype=torch.float32, device=ctx.device)

    rows = []
    for target in targets:
        n_live, seq_len = shape_for(target, bpt, ctx.max_positions)
        row = shape.n_kv_heads * seq_len * shape.head_dim
        footprint = 3 * n_live * n_tensors * row * ctx.dtype_bytes  # pool (2x live) + destination
        # + one more live-sized buffer: the reference gather of the correctness check
        if ctx.is_cuda and footprint * 4 / 3 > 0.7 * torch.cuda.mem_get_info(ctx.device)[0]:
            ctx.progress(f"skip {target / MIB:.1f} MiB: does not fit in free memory")
            continue
        w = make_workload(n_tensors, n_live, row, ctx.dtype, ctx.device)
        ctx.progress(f"compaction {n_live} x {seq_len} tokens ({w.kv_bytes / MIB:,.2f} MiB live)")
        correct = {"naive": is_correct(w, w.naive), "batched": is_correct(w, w.batched)}
        flush = footprint < FLUSH_FACTOR * llc
        setup = (lambda _name: flush_buf.zero_()) if flush else None
        times = time_interleaved({"naive": w.naive, "batched": w.batched}, ctx.device, warmup=warmup,
                                 repeats=repeats, setup=setup)
        moved = 2 * w.kv_bytes
        for method, t in times.items():
            gbs = moved / (t.median_ms * 1e-3) / 1e9
            rows.append({
                "method": method, "bytes_moved": moved, "time_ms": t.median_ms, "p25_ms": t.p25_ms,
                "p75_ms": t.p75_ms, "n": t.n, "spread_wide": t.wide, "gbs": gbs,
                "pct_of_peak": gbs / peak if peak else None, "pct_of_roof": gbs / roof,
                "correct": correct[method], "n_requests": n_live, "seq_len": seq_len, "kv_bytes": w.kv_bytes,
                "n_slots": w.pool.shape[1], "launches": n_tensors if method == "naive" else 1,
                "roof_gbs": roof, "peak_gbs": peak, "cache_flushed": flush,
            })
        del w
    del flush_buf
    if not rows:
        raise RuntimeError("no compaction size fits in free memory")
    big = max(r["bytes_moved"] for r in rows)
    small = min(r["bytes_moved"] for r in rows)
    pick = {(r["method"], r["bytes_moved"]): r for r in rows}
    summary = [
        f"compaction at {big / 1e6:,.0f} MB moved: batched {pick['batched', big]['gbs']:,.1f} GB/s "
        f"({pick['batched', big]['pct_of_roof']:.0%} of roof), naive {pick['naive', big]['gbs']:,.1f} GB/s; "
        f"at {small / 1e6:,.2f} MB batched is {pick['naive', small]['time_ms'] / pick['batched', small]['time_ms']:.1f}x "
        f"faster than naive; all correct: {all(r['correct'] for r in rows)}"]
    return Result({"kv_compact_v2": rows}, summary)
