"""The allocator's view: memory allocated before and after a prefill, per shape, and again once the logits are
dropped (the cache alone, which should match the formula). The profiler write-up's method over-counts by the
gap between the two. Method: docs/methods/memory.md."""
from __future__ import annotations

import gc

import torch

from . import Result, RunContext, Skip
from ...core.kv_formula import kv_shape
from ..kv_cache import cache_bytes, forward_with_cache
from ..probes import CudaAllocator

NAME = "allocator_memory"
GROUP = "allocator"
ORDER = 10
TABLES = ("allocator_memory",)


def sweep(ctx: RunContext) -> list[tuple[int, int]]:
    seqs = [32, 128] if ctx.quick else [64, 128, 256, 512, 1024]
    batches = [1, 2] if ctx.quick else [1, 4]
    return [(s, b) for b in batches for s in seqs if ctx.fits(s)]


def measure_prefill_delta(model, input_ids, probe, peak_probe=None) -> dict:
    """Allocator bytes before the prefill, after it (cache + logits alive), and with only the cache
    alive. `probe` returns currently allocated bytes; tests inject a fake one."""
    gc.collect()
    before = probe()
    if peak_probe is not None:
        peak_probe(reset=True)
    with torch.no_grad():
        logits, cache = forward_with_cache(model, input_ids)
    after = probe()
    logits_bytes = logits.numel() * logits.element_size()
    peak = peak_probe() if peak_probe is not None else None
    del logits
    gc.collect()
    cache_only = probe()
    measured = cache_bytes(cache)
    del cache
    gc.collect()
    return {
        "before_bytes": before, "after_bytes": after, "delta_bytes": after - before,
        "cache_only_delta_bytes": cache_only - before, "logits_bytes": logits_bytes,
        "peak_delta_bytes": (peak - before) if peak is not None else None,
        "tensor_kv_bytes": measured,
    }


def _cuda_probes(device):
    alloc = CudaAllocator(device)

    def peak(reset=False):
        if reset:
            alloc.reset_peak()
            return None
        return alloc.peak()

    return alloc.allocated, peak


def run(ctx: RunContext) -> Result:
    if ctx.memory_probe is not None:
        probe, peak = ctx.memory_probe, None
    elif ctx.is_cuda:
        probe, peak = _cuda_probes(ctx.device)
    else:
        raise Skip("needs the CUDA caching allocator (torch.cuda.memory_allocated); the CPU allocator "
                   "has no per-process counter of live tensor bytes. cache_tensors measures the tensors "
                   "directly instead.")
    shape = kv_shape(ctx.config)
    rows = []
    for seq_len, batch in sweep(ctx):
        ctx.progress(f"prefill seq={seq_len} batch={batch}")
        m = measure_prefill_delta(ctx.model, ctx.input_ids(batch, seq_len), probe, peak)
        tokens = seq_len * batch
        rows.append({
            "seq_len": seq_len, "batch_size": batch,
            "before_bytes": m["before_bytes"], "after_bytes": m["after_bytes"],
            "delta_bytes": m["delta_bytes"], "bytes_per_token": m["delta_bytes"] / tokens,
            "cache_only_delta_bytes": m["cache_only_delta_bytes"],
            "cache_only_bytes_per_token": m["cache_only_delta_bytes"] / tokens,
            "logits_bytes": m["logits_bytes"], "peak_delta_bytes": m["peak_delta_bytes"],
            "formula_bytes_per_token": shape.bytes_per_token(ctx.dtype_bytes),
            "expected_kv_bytes": shape.cache_bytes(seq_len, batch, ctx.dtype_bytes),
        })
    worst = max(rows, key=lambda r: r["bytes_per_token"])
    return Result({"allocator_memory": rows}, [
        f"allocator delta right after prefill: up to {worst['bytes_per_token']:,.0f} B/token "
        f"(formula {worst['formula_bytes_per_token']:,} B/token; the excess is logits and activations)"])
