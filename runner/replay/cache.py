"""A block-level prefix cache, replayed request by request, as vLLM's v1 block pool runs one.

Units: the pool is counted in engine blocks (`engine_block` tokens each, 16 by default as vLLM). The trace's
hash blocks are mapped onto them by `to_units`: a 512-token Mooncake block is 32 engine blocks that hit or
miss together (the trace says nothing finer), so one cached unit costs 32 engine blocks; when the engine
block is larger than the trace's, k = engine / trace consecutive hashes make one engine block, named by its
last hash (a prefix chain: the last hash names the whole prefix). A request's last unit is partial: it
costs a whole unit of space and is worth only its own tokens when hit.

The rules (vLLM v1 `KVCacheManager` / `BlockPool`, as the model facts cite them):
- a request hits the longest run of leading units present (referenced by a running request or cached
  unreferenced); its token hits are those units' tokens. Units after the first miss that happen to be
  present are referenced again (no new space) but not counted as hits, as a recompute.
- a running request holds its prompt's units and ceil(output / engine_block) blocks for its output from
  arrival until arrival + output / decode rate (prefill time not modelled); only unreferenced units can
  be evicted, least recently released first; a request's units are released tail first, so its last
  blocks are evicted before its first (vLLM frees a request's blocks in reverse order).
- a request whose held units and output blocks do not fit in the GPU pool beside the running requests is
  not admitted (counted; its tokens are misses; nothing is cached for it): vLLM would queue it.
- TTL: an unreferenced unit is dropped `ttl` after its release (the providers' cache lifetimes).
- Offload tier: `total_blocks` > `gpu_blocks` adds host memory behind the GPU pool: running requests must
  fit on the GPU, unreferenced units fill the GPU and then the host, evicted least recently released first
  from the two together (an exclusive two-tier LRU; a host hit costs a PCIe load, not a recompute).
"""
from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from itertools import repeat

from ..core.errors import UserError


def to_units(hashes: tuple[int, ...], trace_block: int, engine_block: int) -> tuple[tuple[int, ...], int, int]:
    """(unit ids, tokens per full unit, engine blocks per unit) of one request's trace hashes."""
    if trace_block % engine_block == 0:
        return hashes, trace_block, trace_block // engine_block
    if engine_block % trace_block == 0:
        k = engine_block // trace_block
        units = hashes[k - 1::k]
        if len(hashes) % k:
            units = units + (hashes[-1],)
        return units, engine_block, 1
    raise UserError(f"--block-tokens {engine_block}: neither divides nor is a multiple of the trace's "
                    f"{trace_block}-token blocks, so its blocks cannot be mapped onto the engine's")


class PrefixCache:
    """One pool. `gpu_blocks` None: unlimited. Feed requests in arrival order with `request`; the figures
    are attributes (token hits, evictions, unadmitted requests, peak and mean engine blocks in use)."""

    def __init__(self, gpu_blocks: int | None, total_blocks: int | None = None, ttl_ms: float | None = None):
        self.gpu_blocks = gpu_blocks
        self.total_blocks = gpu_blocks if total_blocks is None else total_blocks
        self.ttl_ms = ttl_ms
        self.free: OrderedDict[int, float] = OrderedDict()  # unreferenced units -> release time, LRU first
        self.ref: dict[int, int] = {}  # referenced units -> number of running requests holding them
        self.running: list = []  # heap of (end ms, sequence, unit ids, output blocks, unit size)
        self.held_out = 0  # engine blocks held for running requests' outputs
        self.ref_blocks = 0  # engine blocks of referenced units
        self.free_blocks = 0  # engine blocks of unreferenced units
        self.seq = 0
        self.hit_tokens = self.input_tokens = self.requests = 0
        self.evictions = self.unadmitted = self.expired = 0  # evictions and expiries in engine blocks
        self.peak_blocks = 0
        self.peak_running = 0  # the most engine blocks running requests held at once (prompt and output)
        self.sum_blocks = 0.0  # blocks in use after each arrival, summed (mean = sum / requests)
        self.hit_requests = 0

    def _release_until(self, t: float) -> None:
        running, ref, free = self.running, self.ref, self.free
        while running and running[0][0] <= t:
            end, _, units, out_blocks, size = heapq.heappop(running)
            self.held_out -= out_blocks
            tail_first = units[::-1]  # released tail first: evicted before the head
            if max(map(ref.__getitem__, tail_first)) == 1:  # held by this request alone: moved in C
                deque(map(ref.pop, tail_first), 0)
                free.update(zip(tail_first, repeat(end)))
                self.ref_blocks -= len(units) * size
                self.free_blocks += len(units) * size
                continue
            for u in tail_first:
                c = ref[u] - 1
                if c:
                    ref[u] = c
                else:
                    del ref[u]
                    free[u] = end
                    self.ref_blocks -= size
                    self.free_blocks += size
        if self.ttl_ms is not None:
            limit = t - self.ttl_ms
            while free:
                u, released = next(iter(free.items()))
                if released >= limit:
                    break
                free.popitem(last=False)
                self.free_blocks -= self._size
                self.expired += self._size

    def request(self, t: float, units: tuple[int, ...], unit_tokens: int, size: int, input_tokens: int,
                out_blocks: int, end: float) -> int:
        """Replay one request arriving at t (ms); returns its hit tokens."""
        self._size = size
        self._release_until(t)
        ref, free = self.ref, self.free
        self.requests += 1
        self.input_tokens += input_tokens
        hits = 0
        for u in units:
            if u in ref or u in free:
                hits += 1
            else:
                break
        head, tail = units[:hits], units[hits:]
        # The usual tail is blocks never seen or long gone: checked and referenced in C, not unit by unit.
        tail_clear = not tail or (ref.keys().isdisjoint(tail) and free.keys().isdisjoint(tail))
        if self.gpu_blocks is not None:
            new_refs = sum(1 for u in (head if tail_clear else units) if u not in ref) + \
                (len(tail) if tail_clear else 0)
            if self.ref_blocks + new_refs * size + self.held_out + out_blocks > self.gpu_blocks:
                self.unadmitted += 1
                self._sample()
                return 0
        for u in (head if tail_clear else units):
            c = ref.get(u)
            if c:
                ref[u] = c + 1
            else:
                if u in free:
                    del free[u]
                    self.free_blocks -= size
                ref[u] = 1
                self.ref_blocks += size
        if tail_clear and tail:
            ref.update(dict.fromkeys(tail, 1))
            self.ref_blocks += len(tail) * size
        self.held_out += out_blocks
        self.seq += 1
        heapq.heappush(self.running, (end, self.seq, units, out_blocks, size))
        if self.total_blocks is not None:
            over = self.ref_blocks + self.free_blocks + self.held_out - self.total_blocks
            while over > 0 and free:
                free.popitem(last=False)
                self.free_blocks -= size
                self.evictions += size
                over -= size
        n = len(units)
        tokens = 0 if hits == 0 else input_tokens if hits == n else hits * unit_tokens
        self.hit_tokens += tokens
        self.hit_requests += hits > 0
        self._sample()
        return tokens

    def _sample(self) -> None:
        running = self.ref_blocks + self.held_out
        if running > self.peak_running:
            self.peak_running = running
        used = running + self.free_blocks
        self.sum_blocks += used
        if used > self.peak_blocks:
            self.peak_blocks = used

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def mean_blocks(self) -> float:
        return self.sum_blocks / self.requests if self.requests else 0.0


class PrefixCeiling:
    """Unlimited capacity, no eviction: the most any pool could hit (holding does not matter without
    eviction). Also counts the distinct units, the space that ceiling needs."""

    def __init__(self):
        self.seen: set[int] = set()
        self.hit_tokens = self.input_tokens = self.requests = 0
        self.unit_blocks = 0
        self.sum_request_rates = 0.0  # each request's own hit share, summed: the call-weighted view, for context

    def request(self, units: tuple[int, ...], unit_tokens: int, size: int, input_tokens: int) -> None:
        seen = self.seen
        hits = 0
        for u in units:
            if u in seen:
                hits += 1
            else:
                break
        tail = units[hits:]
        before = len(seen)
        seen.update(tail)
        self.unit_blocks += (len(seen) - before) * size
        self.requests += 1
        self.input_tokens += input_tokens
        tokens = 0 if hits == 0 else input_tokens if hits == len(units) else hits * unit_tokens
        self.hit_tokens += tokens
        self.sum_request_rates += tokens / input_tokens

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0
