"""Iteration 3 (pressure): how many concurrent requests fit, admitted one real prefill at a time.

Each request is a batch-1 prefill of ctx.model whose cache is kept alive, as a server keeps a live
request's KV. After every admission we record the cache tensor bytes, the allocator's allocated and
reserved bytes, and stop at the first of:
- the ceiling: CEILING_FRACTION of the device memory free at the start (KVREPORT_PRESSURE_FRACTION),
  checked *before* a prefill using the bytes the next request will need (its cache plus the largest
  prefill transient seen so far: logits and activations), so the run stays below the line;
- the request cap or the time budget (an H200 holds thousands of GPT-2 requests; the cap keeps the
  run short, and the theoretical maximum is computed instead);
- an out-of-memory error, which is caught, everything freed, and the device checked usable afterwards.

The theoretical maximum is free memory / measured bytes per request (the seed's definition), and the
serving-engine view is KV capacity = KV budget / bytes per token with max concurrency = capacity / L.

On the CPU there is no caching allocator: "allocated" is the bytes of the storages the caches pin,
reserved is NULL, and the ceiling is min(1 GiB, 5% of RAM) so the host can never be pushed into the
kernel's OOM killer (Linux overcommits: a CPU allocation failure kills the process, it does not raise).
"""
from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass
from typing import Callable

import torch

from . import Result, RunContext
from ..errors import UserError
from ..kv_cache import cache_bytes, cache_layers, forward_with_cache
from ..kv_formula import kv_shape

NAME = "kv_pressure_v3"
ITERATION = "3"
ORDER = 10
TABLES = ("kv_pressure_v3", "kv_capacity_v3")

CEILING_FRACTION = 0.9           # of the device memory free at the start; env KVREPORT_PRESSURE_FRACTION
CPU_CEILING_BYTES = 1 << 30      # CPU: min(this, CPU_CEILING_RAM_SHARE x RAM)
CPU_CEILING_RAM_SHARE = 0.05
# Requests per sequence length (env KVREPORT_PRESSURE_CAP) and seconds for the whole experiment
# (env KVREPORT_PRESSURE_TIME_S). A GPT-2 prefill on an H200 takes milliseconds, so 512 x 3 lengths fit
# in well under a minute; an 8B model's 256..1024-token prefills take ~15-35 ms each, ~45 s for all three.
# The budget is a hard stop for a slower box, sized so one run of the whole suite stays within minutes.
CAPS = {("cuda", False): 512, ("cuda", True): 64, ("cpu", False): 32, ("cpu", True): 8}
TIME_BUDGET_S = {("cuda", False): 120.0, ("cuda", True): 30.0, ("cpu", False): 30.0, ("cpu", True): 6.0}

# What an allocation failure raises: the CUDA caching allocator's error (torch.OutOfMemoryError in recent
# releases, same class), or Python's MemoryError for a host allocation that fails without the OOM killer.
OOM_ERRORS = (torch.cuda.OutOfMemoryError, MemoryError)


def _env_number(name: str, default: float, lo: float, hi: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"environment variable {name}={raw!r}: not a number") from None
    if not lo < value <= hi:
        raise UserError(f"environment variable {name}={raw!r}: expected a value in ({lo}, {hi}]")
    return value


def sweep(ctx: RunContext) -> list[int]:
    seqs = [64, 128] if ctx.quick else [256, 512, 1024]
    return [s for s in seqs if ctx.fits(s)]


def storage_bytes(caches: list) -> int:
    """Bytes of the distinct storages the caches keep alive: what the memory really holds, even when a
    cache tensor is a view into a larger buffer (older transformers kept views of the fused QKV output)."""
    seen, total = set(), 0
    for cache in caches:
        for k, v in cache_layers(cache):
            for t in (k, v):
                s = t.untyped_storage()
                if s.data_ptr() not in seen:
                    seen.add(s.data_ptr())
                    total += s.nbytes()
    return total


class CudaMemory:
    """The CUDA caching allocator's counters for one device."""
    source = "cuda_allocator"

    def __init__(self, device):
        self.torch, self.device = torch, device

    def allocated(self) -> int:
        self.torch.cuda.synchronize(self.device)
        return int(self.torch.cuda.memory_allocated(self.device))

    def reserved(self) -> int | None:
        return int(self.torch.cuda.memory_reserved(self.device))

    def reset_peak(self) -> None:
        self.torch.cuda.reset_peak_memory_stats(self.device)

    def peak(self) -> int | None:
        return int(self.torch.cuda.max_memory_allocated(self.device))


class TensorMemory:
    """CPU stand-in: the storage bytes of the live caches; no reserved pool, no peak counter."""
    source = "tensor_storage"

    def __init__(self):
        self.caches: list = []

    def allocated(self) -> int:
        return storage_bytes(self.caches)

    def reserved(self) -> int | None:
        return None

    def reset_peak(self) -> None:
        pass

    def peak(self) -> int | None:
        return None


@dataclass
class Admission:
    rows: list[dict]
    caches: list
    stop_reason: str           # 'cap' | 'ceiling' | 'time' | 'oom'
    base_allocated: int
    overhead_bytes: int        # largest prefill transient above the new cache (logits, activations)
    error: str | None = None


def admit(prefill: Callable[[], object], seq_len: int, cap: int, ceiling_bytes: int, deadline: float,
          memory, estimate_bytes: int, clock: Callable[[], float] = time.perf_counter) -> Admission:
    """Admit requests one at a time until the cap, the ceiling, the deadline or an out-of-memory error.

    `prefill()` returns one request's cache; tests inject fakes (one that raises OutOfMemoryError to
    exercise the OOM path). The ceiling is checked before each prefill against what the next one needs,
    so the run never crosses it on purpose; an OOM below the ceiling (another tenant, fragmentation) is
    still caught. On OOM the caches are returned so the caller frees them outside the except block (the
    traceback pins the failed forward's tensors while it is being handled)."""
    # TensorMemory counts the caches it is handed, so it and this loop share one list.
    caches = memory.caches if isinstance(memory, TensorMemory) else []
    base = memory.allocated()
    rows: list[dict] = []
    overhead, per_request, kv_total = 0, estimate_bytes, 0
    stop, error = "cap", None
    while len(caches) < cap:
        if clock() > deadline:
            stop = "time"
            break
        used = memory.allocated() - base
        if used + per_request + overhead > ceiling_bytes:
            stop = "ceiling"
            break
        memory.reset_peak()
        try:
            cache = prefill()
        except OOM_ERRORS as exc:
            stop, error = "oom", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            break
        peak = memory.peak()
        caches.append(cache)
        new_kv = cache_bytes(cache)
        per_request = new_kv
        kv_total += new_kv
        allocated = memory.allocated()
        if peak is not None:  # transient above what stays: logits, activations, matmul workspaces
            overhead = max(overhead, peak - allocated)
        rows.append({"seq_len": seq_len, "n_requests": len(caches), "kv_bytes": kv_total,
                     "allocated_bytes": allocated, "reserved_bytes": memory.reserved(),
                     "allocated_delta_bytes": allocated - base, "memory_source": memory.source})
    return Admission(rows, caches, stop, base, overhead, error)


def capacity(seq_len: int, bytes_per_request: int, free_bytes: int, ceiling_bytes: int,
             overhead_bytes: int) -> dict:
    """The seed's theoretical maximum (all free memory / bytes per request) and the serving-engine view:
    KV budget = ceiling - prefill transient, capacity in tokens, concurrency at seq_len."""
    bytes_per_token = bytes_per_request / seq_len
    budget = max(0, ceiling_bytes - overhead_bytes)
    tokens = int(budget // bytes_per_token) if bytes_per_token else 0
    return {
        "theoretical_max_requests": free_bytes // bytes_per_request if bytes_per_request else None,
        "ceiling_max_requests": budget // bytes_per_request if bytes_per_request else None,
        "kv_budget_bytes": budget,
        "capacity_tokens": tokens,
        "max_concurrency": tokens / seq_len,
    }


def _host_available_bytes() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _host_total_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def free_and_ceiling(ctx: RunContext, fraction: float) -> tuple[int, int]:
    if ctx.is_cuda:
        gc.collect()
        torch.cuda.empty_cache()
        free, _total = torch.cuda.mem_get_info(ctx.device)
        return int(free), int(free * fraction)
    free = _host_available_bytes()
    return free, int(min(CPU_CEILING_BYTES, CPU_CEILING_RAM_SHARE * _host_total_bytes(), free) * fraction)


def release(ctx: RunContext, caches: list) -> bool:
    """Free every cache and return whether the device still runs the model afterwards."""
    caches.clear()
    gc.collect()
    if ctx.is_cuda:
        torch.cuda.synchronize(ctx.device)
        torch.cuda.empty_cache()
    return device_usable(ctx)


def device_usable(ctx: RunContext) -> bool:
    """A one-token forward of the model plus a small reduction, synchronised so an asynchronous CUDA error
    surfaces here: proves the allocator and the kernels both still work."""
    try:
        with torch.inference_mode():
            logits, cache = forward_with_cache(ctx.model, ctx.input_ids(1, 1))
            x = torch.ones(1 << 16, device=ctx.device)
            ok = float(x.sum().item()) == float(1 << 16) and logits.shape[-1] == ctx.vocab_size
        del logits, cache, x
        return ok
    except (RuntimeError, *OOM_ERRORS):
        return False


def make_prefill(ctx: RunContext, seq_len: int) -> Callable[[], object]:
    ids = ctx.input_ids(1, seq_len)

    def prefill():
        with torch.inference_mode():  # no autograd graph pinning activations, whoever calls this
            logits, cache = forward_with_cache(ctx.model, ids)
        del logits  # a server keeps the cache, not the full-sequence logits
        return cache

    return prefill


def run(ctx: RunContext) -> Result:
    key = ("cuda" if ctx.is_cuda else "cpu", bool(ctx.quick))
    fraction = _env_number("KVREPORT_PRESSURE_FRACTION", CEILING_FRACTION, 0.0, 1.0)
    cap = int(_env_number("KVREPORT_PRESSURE_CAP", CAPS[key], 0.0, 1e6))
    budget_s = _env_number("KVREPORT_PRESSURE_TIME_S", TIME_BUDGET_S[key], 0.0, 1e5)
    seqs = sweep(ctx)
    weight_bytes = ctx.loaded.weight_bytes()
    shape = kv_shape(ctx.config)
    started = time.perf_counter()
    rows, cap_rows, summary = [], [], []
    for i, seq_len in enumerate(seqs):
        # Split what is left of the time budget evenly over the remaining lengths.
        remaining = budget_s - (time.perf_counter() - started)
        deadline = time.perf_counter() + max(0.0, remaining) / (len(seqs) - i)
        free, ceiling = free_and_ceiling(ctx, fraction)
        memory = CudaMemory(ctx.device) if ctx.is_cuda else TensorMemory()
        formula_bpr = shape.cache_bytes(seq_len, 1, ctx.dtype_bytes)
        ctx.progress(f"admitting requests of {seq_len} tokens (cap {cap}, ceiling {ceiling / 2**20:,.0f} MiB)")
        t0 = time.perf_counter()
        adm = admit(make_prefill(ctx, seq_len), seq_len, cap, ceiling, deadline, memory, formula_bpr)
        elapsed = time.perf_counter() - t0
        n = len(adm.rows)
        last = adm.rows[-1] if adm.rows else None
        bpr = adm.rows[0]["kv_bytes"] if adm.rows else None
        usable = release(ctx, adm.caches)
        del adm.caches
        notes = []
        if not ctx.is_cuda:
            notes.append("CPU: no caching allocator; allocated = storage bytes the caches pin, reserved NULL; "
                         f"ceiling = min(1 GiB, 5% of RAM) x {fraction:g}")
        if adm.error:
            notes.append(f"out of memory after {n} requests: {adm.error}")
        if not usable:
            notes.append("device NOT usable after freeing")
        cap_row = {
            "seq_len": seq_len, "max_requests_measured": n, "bytes_per_request": bpr,
            "free_bytes": free, "ceiling_bytes": ceiling, "stop_reason": adm.stop_reason,
            "ceiling_fraction": fraction, "request_cap": cap, "time_budget_s": budget_s,
            "kv_bytes": last["kv_bytes"] if last else 0,
            "allocated_delta_bytes": last["allocated_delta_bytes"] if last else 0,
            "weight_bytes": weight_bytes, "prefill_overhead_bytes": adm.overhead_bytes,
            "formula_bytes_per_request": formula_bpr, "dtype_bytes": ctx.dtype_bytes, "memory_source": memory.source,
            "device_usable_after": usable, "elapsed_s": elapsed, "notes": "; ".join(notes) or None,
            "theoretical_max_requests": None, "ceiling_max_requests": None, "kv_budget_bytes": None,
            "capacity_tokens": None, "max_concurrency": None,
        }
        if bpr:
            cap_row.update(capacity(seq_len, bpr, free, ceiling, adm.overhead_bytes))
            summary.append(
                f"KV capacity {cap_row['capacity_tokens']:,} tokens; max concurrency "
                f"{cap_row['max_concurrency']:,.1f} requests at {seq_len} tokens "
                f"(admitted {n}, stopped: {adm.stop_reason}; theoretical {cap_row['theoretical_max_requests']:,} "
                f"from {free / 2**30:,.1f} GiB free)")
        rows.extend(adm.rows)
        cap_rows.append(cap_row)
        if not usable:
            break  # the device is broken: further lengths would measure nothing meaningful
    return Result({"kv_pressure_v3": rows, "kv_capacity_v3": cap_rows}, summary)
