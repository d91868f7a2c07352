"""The capacity sweep: one trace replayed through many pools at once, streamed, in a few passes.

Pass 1 checks every line (the rejects), and replays the unlimited ceiling, the TTL pools and the pools of
`--capacity-tokens`. Pass 2 replays a grid of GPU counts (TP groups 1, 2, 3, 4, 6, 8, 12, ... up to the
group count whose pool holds every distinct block the trace ever names), without and with the host tier.
Later passes replay only the GPU counts inside the bracket where the target share of the ceiling is first
reached, until the smallest count is found (the hit rate is taken to grow with capacity, as it does for
LRU; a pass checks up to 7 counts at once). Every pool is fed each request in the same read, so a trace is
never held in memory: what a pass keeps is its pools' contents (bounded by their capacities; the ceiling
and the chain check keep one entry per distinct hash).

The pool of N GPUs is N / tp tensor-parallel groups, each with the KV pool `kv_pool` finds on one GPU,
pooled into one cache: this assumes prefix-aware routing (Mooncake's global pool, llm-d's prefix scorer);
with requests spread blindly across replicas each one's cache sees a fraction of the traffic and hits less.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError
from .cache import PrefixCache, PrefixCeiling, to_units
from .traces import Reject, TraceReader

TTLS_S = (300, 3600)  # the providers' prompt-cache lifetimes: 5 minutes and 1 hour
MAX_GROUPS = 1 << 16


@dataclass(frozen=True)
class KVPool:
    """One TP group's KV pool in engine blocks, and what a block costs on a GPU rank and on the host."""
    blocks_per_group: int
    block_bytes_per_rank: int
    block_bytes_host: int  # one copy of every layer's and head's share of a block (what an offload tier keeps)
    basis: str


def kv_pool(facts, gpu_bytes: int, tp: int, dtype: str, block_tokens: int) -> KVPool:
    """The one seam for the KV pool a TP group leaves for the cache: the model facts' "fits per GPU" view
    (runner/core/model_facts.py: 0.9 x GPU bytes, vLLM's gpu_memory_utilization, minus weights / tp; KV heads
    split across ranks) asked for requests of one block each, which is the pool counted in blocks. An engine
    profile (measured or read from an engine's rules) can replace this function alone."""
    per_rank = facts.engine_cache_bytes(block_tokens, 1, dtype, tp)
    host = facts.engine_cache_bytes(block_tokens, 1, dtype, 1)
    if per_rank <= 0:
        raise UserError(f"{facts.name}: keeps no per-token KV cache, so there is no prefix cache to replay")
    blocks = facts.fits(gpu_bytes, block_tokens, tp, dtype)
    if blocks <= 0:
        raise UserError(f"{facts.name} ({facts.weight_bytes(dtype) / 1e9:,.1f} GB of {dtype} weights) leaves no KV "
                        f"pool on {gpu_bytes / 1e9:,.1f} GB GPUs at --tp {tp}: give a larger --tp or GPU")
    return KVPool(blocks, per_rank, host,
                  "model facts' fits view: 0.9 x GPU bytes - weights / tp, divided by one "
                  f"{block_tokens}-token block's engine-view bytes per rank (analytic, vLLM's rules)")


@dataclass
class Setup:
    paths: list[Path]
    pool: KVPool
    tp: int
    engine_block: int = 16
    trace_block: int | None = None
    decode_tokens_per_s: float = 30.0
    target: float = 0.9
    capacity_tokens: list[int] = field(default_factory=list)
    host_bytes_per_gpu: int | None = None
    progress: Callable[[str, int, float], None] | None = None  # (pass name, lines read, seconds)


def _host_blocks(setup: Setup, groups: int) -> int:
    if not setup.host_bytes_per_gpu:
        return 0
    return groups * setup.tp * setup.host_bytes_per_gpu // setup.pool.block_bytes_host


SPOOL_UNITS = 4_000_000  # a trace with up to this many block references is kept after pass 1 (~100 MB)


class _Spool:
    """Pass 1's mapped requests, kept for the later passes while they stay under SPOOL_UNITS references
    (re-reading and re-parsing costs more than a replay); a bigger trace is read again each pass."""

    def __init__(self):
        self.rows: list | None = []
        self.units = 0

    def add(self, row: tuple) -> None:
        if self.rows is not None:
            self.units += len(row[1])
            self.rows.append(row) if self.units <= SPOOL_UNITS else setattr(self, "rows", None)


def _requests(setup: Setup, name: str, spool: _Spool | None):
    """Mapped requests (t, units, unit tokens, unit size, input tokens, output blocks, end) of one pass, and
    the reader (None when they came from the spool)."""
    if spool is not None and spool.rows is not None and name != "pass 1":
        return spool.rows, None
    start = time.perf_counter()
    report = setup.progress
    tick = None
    if report is not None:
        def tick(lines: int) -> None:
            report(name, lines, time.perf_counter() - start)
    reader = TraceReader(setup.paths, setup.trace_block, progress=tick)

    def rows():
        engine_block, rate = setup.engine_block, setup.decode_tokens_per_s
        unit_size = None
        for req in reader:
            units, unit_tokens, size = to_units(req.hashes, req.trace_block, engine_block)
            if unit_size is None:
                unit_size = (req.trace_block, size)
            elif unit_size != (req.trace_block, size):
                reader.rejects.append(Reject("(trace)", 0, "hash_ids", f"{req.trace_block}-token blocks mixed "
                                             f"with {unit_size[0]}-token blocks in one replay"))
                continue
            row = (req.t_ms, units, unit_tokens, size, req.input_tokens, -(-req.output_tokens // engine_block),
                   req.t_ms + 1000.0 * req.output_tokens / rate)
            if spool is not None and name == "pass 1":
                spool.add(row)
            yield row
        if report is not None:
            report(name, reader.n_lines, time.perf_counter() - start)
    return rows(), reader


def _feed(setup: Setup, name: str, ceiling: PrefixCeiling | None, pools: list[PrefixCache],
          spool: _Spool | None = None) -> TraceReader | None:
    """One pass over the trace, every request fed to every pool."""
    rows, reader = _requests(setup, name, spool)
    for t, units, unit_tokens, size, input_tokens, out_blocks, end in rows:
        if ceiling is not None:
            ceiling.request(units, unit_tokens, size, input_tokens)
        for pool in pools:
            pool.request(t, units, unit_tokens, size, input_tokens, out_blocks, end)
    return reader


def _point(setup: Setup, pool: PrefixCache, groups: int | None) -> dict:
    gpu_blocks, total_blocks = pool.gpu_blocks, pool.total_blocks
    if gpu_blocks is None or total_blocks is None:
        raise ValueError("a point of the curve needs a sized pool")
    host_blocks = total_blocks - gpu_blocks
    tokens = gpu_blocks * setup.engine_block
    return {
        "capacity_tokens": tokens,
        "capacity_bytes": gpu_blocks * setup.pool.block_bytes_per_rank * setup.tp // 1,
        "gpus": groups * setup.tp if groups is not None else None,
        "gpus_needed": -(-gpu_blocks // setup.pool.blocks_per_group) * setup.tp,
        "host_tokens": host_blocks * setup.engine_block,
        "host_bytes": host_blocks * setup.pool.block_bytes_host,
        "hit_rate": pool.hit_rate,
        "prefill_tokens_saved": pool.hit_tokens,
        "peak_blocks": pool.peak_blocks,
        "mean_blocks": pool.mean_blocks,
        "evictions": pool.evictions,
        "unadmitted": pool.unadmitted,
    }


def _grid(max_groups: int) -> list[int]:
    """TP-group counts 1, 2, 3, 4, 6, 8, 12, 16, 24, ... up to and including max_groups."""
    out, g = [1, 2, 3], 4
    while g < max_groups and g < MAX_GROUPS:
        out += [g, g * 3 // 2]
        g *= 2
    out = sorted({min(x, max_groups) for x in out + [max_groups]})
    return out


def _pool(unbounded: PrefixCache, gpu_blocks: int, total_blocks: int) -> PrefixCache:
    """A pool to replay, or, when it is large enough never to evict nor refuse a request (the unbounded
    pool's peaks fit in it), the unbounded pool's figures under its sizes: the replay would be the same."""
    if unbounded.peak_blocks <= total_blocks and unbounded.peak_running <= gpu_blocks:
        same = copy.copy(unbounded)
        same.gpu_blocks, same.total_blocks = gpu_blocks, total_blocks
        return same
    return PrefixCache(gpu_blocks, total_blocks)


def _first_reaching(results: dict[int, float], goal: float) -> int | None:
    for g in sorted(results):
        if results[g] >= goal:
            return g
    return None


def replay(setup: Setup) -> dict:
    """The whole replay as one JSON-ready dict (see the command's --json)."""
    if not setup.paths:
        raise UserError("no trace files given")
    began = time.perf_counter()
    ceiling = PrefixCeiling()
    bpg = setup.pool.blocks_per_group
    fixed = [PrefixCache(max(1, c // setup.engine_block)) for c in setup.capacity_tokens]
    ttl_pools = [PrefixCache(None, None, ttl_ms=s * 1000.0) for s in TTLS_S]
    unbounded = PrefixCache(None)  # holds everything: what every pool that never has to evict replays
    spool = _Spool()
    reader = _feed(setup, "pass 1", ceiling, fixed + ttl_pools + [unbounded], spool)
    assert reader is not None  # the first pass always reads the files
    if ceiling.requests == 0:
        first = f"; first: {reader.rejects[0]}" if reader.rejects else ""
        raise UserError(f"no replayable request in {', '.join(str(p) for p in setup.paths)} "
                        f"({len(reader.rejects)} rejects){first}")
    ceiling_rate = ceiling.hit_rate
    goal = setup.target * ceiling_rate

    # The grid: up to the groups that hold every distinct block (and one group more for what runs).
    max_groups = max(1, -(-ceiling.unit_blocks // bpg) + 1)
    grid = _grid(max_groups)
    plain = {g: _pool(unbounded, g * bpg, g * bpg) for g in grid}
    tiered = {g: _pool(unbounded, g * bpg, g * bpg + _host_blocks(setup, g)) for g in grid} \
        if setup.host_bytes_per_gpu else {}
    _feed(setup, "pass 2", None, [p for p in list(plain.values()) + list(tiered.values()) if p.requests == 0],
          spool)
    pools = {"gpu": plain, "host": tiered}
    rates = {k: {g: p.hit_rate for g, p in v.items()} for k, v in pools.items()}

    # Narrow each bracket (the last grid count below the goal, the first at or above it) to one count.
    def bracket(kind: str) -> tuple[int, int] | None:
        hit = _first_reaching(rates[kind], goal)
        if hit is None:
            return None
        below = max([g for g in rates[kind] if g < hit and rates[kind][g] < goal], default=0)
        return below, hit

    passes = 0
    while True:
        todo = {}
        for kind in ("gpu", "host") if tiered else ("gpu",):
            b = bracket(kind)
            if b and b[1] - b[0] > 1:
                lo, hi = b
                step = max(1, (hi - lo) // 8)
                todo[kind] = [g for g in range(lo + step, hi, step) if g not in rates[kind]][:7]
        todo = {k: v for k, v in todo.items() if v}
        if not todo:
            break
        new = {k: {g: _pool(unbounded, g * bpg, g * bpg + (_host_blocks(setup, g) if k == "host" else 0))
                   for g in gs} for k, gs in todo.items()}
        passes += 1
        _feed(setup, f"pass {2 + passes}", None, [p for d in new.values() for p in d.values() if p.requests == 0],
              spool)
        for k, d in new.items():
            pools[k].update(d)
            rates[k].update({g: p.hit_rate for g, p in d.items()})

    def answer(kind: str) -> dict | None:
        g = _first_reaching(rates[kind], goal)
        if g is None:
            return None
        return _point(setup, pools[kind][g], g)

    curve = sorted([_point(setup, p, None) for p in fixed] + [_point(setup, p, g) for g, p in plain.items()],
                   key=lambda r: (r["capacity_tokens"], r["gpus"] is None))
    curve_host = [_point(setup, p, g) for g, p in sorted(tiered.items())]
    found = answer("gpu")
    found_host = answer("host") if tiered else None
    rejects = reader.rejects
    return {
        "requests": ceiling.requests,
        "lines": reader.n_lines,
        "blank_lines": reader.n_blank,
        "shapes": reader.shapes,
        "rejects": len(rejects),
        "reject_lines": [{"file": r.file, "line": r.line, "field": r.field, "reason": r.reason} for r in rejects],
        "input_tokens": ceiling.input_tokens,
        "ceiling_hit_rate": ceiling_rate,
        "ceiling_prefill_tokens_saved": ceiling.hit_tokens,
        # Context only, never the hit rate: the mean of each request's own hit share (call-weighted), the
        # definition Mooncake's maintainers describe for their hit rate (kvcache-ai/Mooncake issue #972).
        "ceiling_call_weighted": ceiling.sum_request_rates / ceiling.requests,
        "ceiling_blocks": ceiling.unit_blocks,
        "ceiling_tokens": ceiling.unit_blocks * setup.engine_block,
        "target": setup.target,
        "target_hit_rate": goal,
        "curve": curve,
        "curve_with_host": curve_host,
        "ttl": [{"ttl_s": s, "hit_rate": p.hit_rate, "prefill_tokens_saved": p.hit_tokens,
                 "peak_blocks": p.peak_blocks, "mean_blocks": p.mean_blocks, "expired": p.expired}
                for s, p in zip(TTLS_S, ttl_pools)],
        "gpus_for_target": found["gpus"] if found else None,
        "at_target": found,
        "gpus_for_target_with_host": found_host["gpus"] if found_host else None,
        "at_target_with_host": found_host,
        "searched_gpus": sorted(g * setup.tp for g in rates["gpu"]),
        "passes": 2 + passes,
        "seconds": time.perf_counter() - began,
    }
