"""Pressure: how many concurrent requests fit, filled with real prefills up to a ceiling (a share of the free
memory; KVREPORT_PRESSURE_FRACTION), the time budget or an out-of-memory error. Stores one row per admission
(cache, allocated and reserved bytes), the capacity figures, and on a GPU the result of a deliberate
out-of-memory in a child process (runner/measure/oom_child.py). Method: docs/methods/pressure.md."""
from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass
from typing import Callable

import torch

from . import Result, RunContext
from ...core.errors import UserError
from ...core.kv_formula import kv_shape
from ..child_process import ChildError, run_json_child
from ..kv_cache import cache_bytes, cache_layers, forward_with_cache
from ..probes import CudaAllocator, cuda_free_bytes, host_available_bytes, host_total_bytes

NAME = "pressure"
GROUP = "serving"
ORDER = 10
TABLES = ("pressure", "concurrent_capacity")

CEILING_FRACTION = 0.9           # of the device memory free at the start; env KVREPORT_PRESSURE_FRACTION
CPU_CEILING_BYTES = 1 << 30      # CPU: min(this, CPU_CEILING_RAM_SHARE x RAM)
CPU_CEILING_RAM_SHARE = 0.05
# Requests per sequence length (env KVREPORT_PRESSURE_CAP) and seconds for the whole experiment
# (env KVREPORT_PRESSURE_TIME_S). A GPT-2 prefill on an H200 takes milliseconds, so 512 x 3 lengths fit
# in well under a minute; an 8B model's 256..1024-token prefills take ~15-35 ms each, ~45 s for all three.
# The budget is a hard stop for a slower box, sized so one run of the whole suite stays within minutes.
# On a GPU there is no request cap: the ceiling (or the time budget) stops the fill, so capacity is
# measured, not extrapolated; requests are prefilled PREFILL_BATCH at a time to fill it within the budget.
CAPS = {("cuda", False): 1_000_000, ("cuda", True): 1_000_000, ("cpu", False): 32, ("cpu", True): 8}
PREFILL_BATCH = {("cuda", False): 16, ("cuda", True): 8, ("cpu", False): 1, ("cpu", True): 1}
TIME_BUDGET_S = {("cuda", False): 60.0, ("cuda", True): 20.0, ("cpu", False): 15.0, ("cpu", True): 6.0}
OOM_CHILD_TIMEOUT_S = 120

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


def admit(prefill: Callable[[int], object], seq_len: int, cap: int, ceiling_bytes: int, deadline: float,
          memory, estimate_bytes: int, clock: Callable[[], float] = time.perf_counter,
          batch: int = 1) -> Admission:
    """Admit requests, up to `batch` per prefill, until the cap, the ceiling, the deadline or an
    out-of-memory error.

    `prefill(k)` returns one cache holding k requests; tests inject fakes (one that raises
    OutOfMemoryError to exercise the OOM path). The ceiling is checked before each prefill against what
    the next one needs (a smaller batch when a full one would cross it), so the run never crosses it on
    purpose; an OOM below the ceiling (another tenant, fragmentation) is still caught. On OOM the caches
    are returned so the caller frees them outside the except block (the traceback pins the failed
    forward's tensors while it is being handled)."""
    # TensorMemory counts the caches it is handed, so it and this loop share one list.
    caches = memory.caches if isinstance(memory, TensorMemory) else []
    base = memory.allocated()
    rows: list[dict] = []
    overhead, per_request, kv_total = 0, estimate_bytes, 0
    stop, error, admitted = "cap", None, 0
    while admitted < cap:
        if clock() > deadline:
            stop = "time"
            break
        used = memory.allocated() - base
        room = int((ceiling_bytes - used - overhead) // per_request) if per_request else batch
        k = min(batch, cap - admitted, room)
        if k < 1:
            stop = "ceiling"
            break
        memory.reset_peak()
        try:
            cache = prefill(k)
        except OOM_ERRORS as exc:
            stop, error = "oom", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            break
        peak = memory.peak()
        caches.append(cache)
        new_kv = cache_bytes(cache)
        per_request = new_kv / k
        kv_total += new_kv
        admitted += k
        allocated = memory.allocated()
        if peak is not None:  # transient above what stays: logits, activations, matmul workspaces
            overhead = max(overhead, peak - allocated)
        rows.append({"seq_len": seq_len, "n_requests": admitted, "kv_bytes": kv_total,
                     "allocated_bytes": allocated, "reserved_bytes": memory.reserved(),
                     "allocated_delta_bytes": allocated - base, "memory_source": memory.source})
    return Admission(rows, caches, stop, base, overhead, error)


def capacity(seq_len: int, bytes_per_request: int, free_bytes: int, ceiling_bytes: int,
             overhead_bytes: int) -> dict:
    """The profiler write-up's theoretical maximum (all free memory / bytes per request) and the serving-engine view:
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


def free_and_ceiling(ctx: RunContext, fraction: float) -> tuple[int, int]:
    if ctx.is_cuda:
        gc.collect()
        torch.cuda.empty_cache()
        free, _total = cuda_free_bytes(ctx.device)
        return free, int(free * fraction)
    free = host_available_bytes()
    return free, int(min(CPU_CEILING_BYTES, CPU_CEILING_RAM_SHARE * host_total_bytes(), free) * fraction)


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


def make_prefill(ctx: RunContext, seq_len: int) -> Callable[[int], object]:
    def prefill(k: int = 1):
        ids = ctx.input_ids(k, seq_len)
        with torch.inference_mode():  # no autograd graph pinning activations, whoever calls this
            logits, cache = forward_with_cache(ctx.model, ids)
        del logits  # a server keeps the cache, not the full-sequence logits
        return cache

    return prefill


def run(ctx: RunContext) -> Result:
    key = ("cuda" if ctx.is_cuda else "cpu", bool(ctx.quick))
    fraction = _env_number("KVREPORT_PRESSURE_FRACTION", CEILING_FRACTION, 0.0, 1.0)
    cap = int(_env_number("KVREPORT_PRESSURE_CAP", CAPS[key], 0.0, 1e6))
    batch = PREFILL_BATCH[key]
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
        memory = CudaAllocator(ctx.device) if ctx.is_cuda else TensorMemory()
        formula_bpr = shape.cache_bytes(seq_len, 1, ctx.dtype_bytes)
        ctx.progress(f"admitting requests of {seq_len} tokens (cap {cap}, ceiling {ceiling / 2**20:,.0f} MiB)")
        t0 = time.perf_counter()
        adm = admit(make_prefill(ctx, seq_len), seq_len, cap, ceiling, deadline, memory, formula_bpr, batch=batch)
        elapsed = time.perf_counter() - t0
        last = adm.rows[-1] if adm.rows else None
        n = last["n_requests"] if last else 0
        bpr = adm.rows[0]["kv_bytes"] // adm.rows[0]["n_requests"] if adm.rows else None
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
            "capacity_tokens": None, "max_concurrency": None, "prefill_batch": batch,
        }
        if bpr:
            cap_row.update(capacity(seq_len, bpr, free, ceiling, adm.overhead_bytes))
            summary.append(
                f"KV capacity {cap_row['capacity_tokens']:,} tokens; max concurrency "
                f"{cap_row['max_concurrency']:,.1f} requests at {seq_len} tokens by the engine's rule, not measured "
                f"(measured: admitted {n}, stopped: {adm.stop_reason}; theoretical "
                f"{cap_row['theoretical_max_requests']:,} from {free / 2**30:,.1f} GiB free)")
        rows.extend(adm.rows)
        cap_rows.append(cap_row)
        if not usable:
            break  # the device is broken: further lengths would measure nothing meaningful
    status, note = oom_recovery(ctx)
    summary.append(f"deliberate out-of-memory in a child process: {status}" + (f" ({note})" if note else ""))
    for row in cap_rows:
        row.update(oom_child_status=status, oom_child_note=note)
    return Result({"pressure": rows, "concurrent_capacity": cap_rows}, summary)


def oom_recovery(ctx: RunContext) -> tuple[str, str | None]:
    """('recovered' | 'failed' | 'skipped', note): one deliberate out-of-memory in a child process
    (runner/measure/oom_child.py): caught, memory freed, and a forward pass still runs afterwards."""
    if not ctx.is_cuda:
        return "skipped", ("CPU: an allocation past the host's memory is the kernel's OOM killer, not an "
                           "exception, so there is no recovery path to prove")

    try:
        out = run_json_child("kvreport.runner.measure.oom_child", {"device": str(ctx.device)}, "out-of-memory child",
                             OOM_CHILD_TIMEOUT_S)
    except ChildError as exc:
        return "failed", str(exc)
    detail = (f"caught at {out['allocated_at_oom'] / 2**30:,.1f} GiB allocated, freed: {out['freed']}, "
              f"forward pass afterwards: {out['forward_ok']}")
    ok = out["caught"] and out["freed"] and out["forward_ok"]
    return ("recovered" if ok else "failed"), detail
