"""Fragmentation: what the CUDA caching allocator keeps after requests are evicted, with the default allocator
and with expandable_segments:True, each in a fresh child process (runner/measure/frag_child.py) on this
model's real per-request KV shapes. Stores the allocator counters after each phase; retention = reserved -
allocated. Method: docs/methods/fragmentation.md."""
from __future__ import annotations

import os

from . import Result, RunContext, Skip
from ..child_process import ChildError, run_json_child
from ...core.kv_formula import kv_shape
from ..probes import cuda_free_bytes

NAME = "fragmentation"
GROUP = "cache"
ORDER = 30
TABLES = ("fragmentation",)
ALLOCATORS = {"default": None, "expandable_segments": "expandable_segments:True"}
CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")  # the second is torch >= 2.9's name
CHILD_TIMEOUT_S = 120  # a child needs ~10 s (torch import, CUDA init, <1 s of work); a hang must not eat the run


class FragChildError(ChildError):
    pass


def scenario_spec(ctx: RunContext, budget_bytes: int) -> dict:
    """Requests sized to this model: prompts of 16..1024 tokens (or the model's limit), as many requests
    as fit in `budget_bytes` (at most 64), 40% evicted, 16 decode steps."""
    shape = kv_shape(ctx.config)
    max_len = min(1024, ctx.max_positions - 32)
    bpt = shape.bytes_per_token(ctx.dtype_bytes)
    avg = (16 + max_len) / 2
    n = int(max(4, min(64, budget_bytes // (bpt * avg))))
    return {"device": str(ctx.device), "dtype": str(ctx.dtype).replace("torch.", ""),
            "n_layers": shape.n_layers, "n_kv_heads": shape.n_kv_heads, "head_dim": shape.head_dim,
            "n_requests": n, "min_len": 16, "max_len": max_len, "decode_steps": 16,
            "evict_fraction": 0.4, "seed": ctx.seed + 7}


def run_child(allocator: str, spec: dict, timeout_s: int = CHILD_TIMEOUT_S) -> dict:
    """Run the scenario in a fresh process with the allocator setting; its JSON result, or
    FragChildError naming the setting and the child's last error line."""
    env = {k: v for k, v in os.environ.items() if k not in CONF_VARS}
    if ALLOCATORS[allocator]:
        for var in CONF_VARS:
            env[var] = ALLOCATORS[allocator]
    return run_json_child("kvreport.runner.measure.frag_child", spec, f"{allocator} allocator", timeout_s, env,
                          error=FragChildError)


def run(ctx: RunContext) -> Result:
    if not ctx.is_cuda:
        raise Skip("needs the CUDA caching allocator: fragmentation is a property of torch's CUDA allocator, "
                   "and this run has no GPU")
    free, _ = cuda_free_bytes(ctx.device)
    spec = scenario_spec(ctx, min(2 << 30, int(0.25 * free)))
    rows, summary = [], []
    for allocator in ALLOCATORS:
        ctx.progress(f"fragmentation scenario, {allocator} allocator ({spec['n_requests']} requests)")
        out = run_child(allocator, spec)
        confirmed = out.get("expandable_in_use")
        if confirmed is not None and allocator == "default":
            confirmed = not confirmed
        for p in out["phases"]:
            rows.append({"allocator": allocator, **p, "n_requests": spec["n_requests"],
                         "kv_live_bytes": out["kv_live_bytes"], "setting_confirmed": confirmed})
        ph = {p["phase"]: p for p in out["phases"]}
        kept = ph["after_evict"]["reserved_bytes"] - ph["after_evict"]["allocated_bytes"]
        kept_ec = ph["after_empty_cache"]["reserved_bytes"] - ph["after_empty_cache"]["allocated_bytes"]
        ec = ph["after_empty_cache"]
        segs = ("" if ec.get("expandable_segments") is None else
                f"; {ec['expandable_segments']} expandable segment(s), {ec['expandable_segment_bytes'] / 1e6:,.1f} MB, "
                "after empty_cache")
        summary.append(f"{allocator} allocator: after evicting {ph['after_evict']['evicted_bytes'] / 1e6:,.1f} MB, "
                       f"{kept / 1e6:,.1f} MB reserved beyond allocated ({kept_ec / 1e6:,.1f} MB after empty_cache); "
                       f"peak reserved while caches grew {ph['admitted']['peak_reserved_bytes'] / 1e6:,.1f} MB{segs}")
    return Result({"fragmentation": rows}, summary)
