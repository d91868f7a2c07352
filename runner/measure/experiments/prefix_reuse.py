"""Audit: does reusing a prefix's KV cut prefill work, and does evicting idle sessions free their memory?
Times each turn's prefill three ways (recompute, system_prefix, session_prefix), checks reuse is exact from the
logits, and stores the bytes held before and after a share of the sessions disconnect.
Method: docs/methods/prefix-reuse.md."""
from __future__ import annotations

import copy
import gc

import torch

from . import Result, RunContext
from ..kv_cache import cache_bytes, cache_seq_len, forward_with_cache
from ...core.kv_formula import kv_shape
from ..probes import CudaAllocator, cuda_free_bytes, host_available
from ..timing import time_fn, time_interleaved

NAME = "prefix_reuse"
GROUP = "traffic"
ORDER = 20
TABLES = ("prefix_reuse", "prefix_reuse_evict")
MODES = ("recompute", "system_prefix", "session_prefix")


def shape(ctx: RunContext) -> dict:
    if ctx.quick:
        s = dict(sessions=3, turns=3, system=48, user=8, assistant=8, warmup=1, repeats=3)
    else:
        s = dict(sessions=8, turns=6, system=256, user=32, assistant=64, warmup=2, repeats=10)
        if not ctx.is_cuda:  # half the conversation and fewer repeats: a 768-token CPU prefill takes ~1.5 s
            s.update(sessions=4, turns=4, system=128, user=16, assistant=32, warmup=1, repeats=3)
    # The longest cache is a whole conversation, last reply included (sessions 1.. and session 0 after its
    # last turn): it must fit the model's position table. Shrink the system prompt first, then drop turns.
    def total():
        return s["system"] + s["turns"] * (s["user"] + s["assistant"])

    if total() > ctx.max_positions:
        s["system"] = max(8, s["system"] - (total() - ctx.max_positions))
    while total() > ctx.max_positions and s["turns"] > 1:
        s["turns"] -= 1
    return s


def _prefill(model, input_ids, cache=None):
    """A forward pass keeping the last position's logits only: what a serving prefill computes, and all the
    exactness check compares (on a CPU the full vocabulary head was most of a short prefill's time)."""
    return forward_with_cache(model, input_ids, cache, last_logits_only=True)


def _ids(ctx: RunContext, n: int, key: int):
    g = torch.Generator().manual_seed(ctx.seed * 7919 + key)
    return torch.randint(0, ctx.vocab_size, (1, n), generator=g).to(ctx.device)


# Reused and recomputed prefills run different kernels (different shapes), so they agree to rounding:
# relative to the logits' scale, about 1e-6 in float32 and 1e-3..1e-2 in 16-bit. A wrong prefix (other
# tokens, wrong positions) is off by the logits' own size.
TOLERANCE = {torch.float32: 1e-3, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def logits_agree(ref, got, dtype) -> tuple[float, bool]:
    """(max |difference| of the last position's logits, whether it is within rounding of the scale)."""
    a, b = ref[0, -1].float(), got[0, -1].float()
    diff = float((a - b).abs().max())
    scale = max(1.0, float(a.abs().max()))
    return diff, diff <= TOLERANCE.get(dtype, 6e-2) * scale


def run(ctx: RunContext) -> Result:
    sh = shape(ctx)
    model, dev = ctx.model, ctx.device
    system = _ids(ctx, sh["system"], 1)
    with torch.no_grad():
        _, sys_cache = _prefill(model, system)
    P = cache_seq_len(sys_cache)
    users = [[_ids(ctx, sh["user"], 1000 + 100 * s + t) for t in range(sh["turns"])] for s in range(sh["sessions"])]
    replies = [[_ids(ctx, sh["assistant"], 50000 + 100 * s + t) for t in range(sh["turns"])]
               for s in range(sh["sessions"])]

    # Session 0 is played turn by turn, keeping a copy of its cache before each new user message (the
    # prefix the session_prefix variant starts from); the others only need their final cache (for the
    # eviction part), so each is one prefill of its whole conversation after the shared system prompt.
    session_caches, before_turn, cached_seen = [], [], {}
    with torch.no_grad():
        for s in range(sh["sessions"]):
            cache = copy.deepcopy(sys_cache)
            if s == 0:
                for t in range(sh["turns"]):
                    before_turn.append(copy.deepcopy(cache))
                    cached_seen[t] = cache_seq_len(cache)
                    _, cache = _prefill(model, torch.cat([users[s][t], replies[s][t]], dim=1), cache)
            else:
                convo = torch.cat([x for t in range(sh["turns"]) for x in (users[s][t], replies[s][t])], dim=1)
                _, cache = _prefill(model, convo, cache)
            session_caches.append(cache)

    # Every turn on a GPU; on a CPU (seconds per long prefill) every other turn, always ending on the last.
    turns = list(range(sh["turns"])) if ctx.is_cuda else list(range(sh["turns"] - 1, -1, -2))[::-1]
    if ctx.quick:
        turns = [sh["turns"] - 1]
    copy_t = time_fn(lambda: copy.deepcopy(sys_cache), dev, warmup=1, repeats=5)
    rows = []
    for t in turns:
        ctx.progress(f"prefill turn {t + 1}: recompute vs reused system prompt vs reused session")
        convo = torch.cat([x for k in range(t) for x in (users[0][k], replies[0][k])] + [users[0][t]], dim=1)
        full = torch.cat([system, convo], dim=1)
        live = {}

        def setup(name, t=t, live=live):
            live["cache"] = (copy.deepcopy(sys_cache) if name == "system_prefix"
                             else copy.deepcopy(before_turn[t]) if name == "session_prefix" else None)

        inputs = {"recompute": full, "system_prefix": convo, "session_prefix": users[0][t]}
        variants = {m: (lambda m=m, inputs=inputs, live=live: _prefill(model, inputs[m], live["cache"])) for m in MODES}
        with torch.no_grad():
            timings = time_interleaved(variants, dev, warmup=sh["warmup"], repeats=sh["repeats"], setup=setup)
            # Exactness: the last position's logits with each reuse vs recomputing everything.
            ref, _ = _prefill(model, full)
            diffs = {"recompute": (0.0, True)}
            for m in MODES[1:]:
                setup(m)
                logits, _ = _prefill(model, inputs[m], live["cache"])
                diffs[m] = logits_agree(ref, logits, ctx.dtype)
        cached = {"recompute": 0, "system_prefix": P, "session_prefix": cached_seen[t]}
        for m in MODES:
            rows.append({
                "turn": t + 1, "mode": m, "n_sessions": sh["sessions"], "prompt_tokens": int(full.shape[1]),
                "cached_tokens": cached[m], "computed_tokens": int(inputs[m].shape[1]),
                **timings[m].columns(), "copy_ms": None if m == "recompute" else copy_t.median_ms,
                "max_abs_logit_diff": diffs[m][0], "logits_match": diffs[m][1],
                "system_tokens": P, "user_tokens": sh["user"], "assistant_tokens": sh["assistant"],
            })

    evict_rows = _evict(ctx, session_caches, sh)
    last = [r for r in rows if r["turn"] == max(turns) + 1]
    by = {r["mode"]: r for r in last}
    saved = 1 - by["session_prefix"]["time_ms"] / by["recompute"]["time_ms"]
    after = evict_rows[-1]
    return Result({"prefix_reuse": rows, "prefix_reuse_evict": evict_rows}, [
        f"prefix reuse, turn {max(turns) + 1}: prefill {by['recompute']['time_ms']:.1f} ms recomputing "
        f"{by['recompute']['computed_tokens']} tokens vs {by['session_prefix']['time_ms']:.1f} ms computing "
        f"{by['session_prefix']['computed_tokens']} ({100 * saved:.0f}% less time); evicting "
        f"{evict_rows[0]['disconnected_held']} disconnected of {sh['sessions']} sessions freed "
        f"{after['freed_bytes']:,} B of KV"])


def _allocated(ctx: RunContext) -> int | None:
    return CudaAllocator(ctx.device).allocated() if ctx.is_cuda else None


def _free(ctx: RunContext) -> tuple[int | None, str | None]:
    """Memory a new session's KV could use now: on CUDA the driver's free memory plus what the caching
    allocator holds unused; on the CPU the host's MemAvailable."""
    if ctx.is_cuda:
        return (cuda_free_bytes(ctx.device)[0] + CudaAllocator(ctx.device).idle_reserved(),
                "measured: cudaMemGetInfo free + allocator-reserved unused")
    free, source = host_available()
    return free, f"measured: {source}" if source else None


def _evict(ctx: RunContext, caches: list, sh: dict) -> list[dict]:
    n = len(caches)
    gone = set(range(n - n // 3, n))  # the last third of the sessions disconnect
    per_session = [cache_bytes(c) for c in caches]
    context = sh["system"] + sh["turns"] * (sh["user"] + sh["assistant"])
    expected = kv_shape(ctx.config).cache_bytes(context, 1, ctx.dtype_bytes) * n
    mean = sum(per_session) / n
    held_before = sum(per_session)
    alloc_before = _allocated(ctx)
    free_before, free_src = _free(ctx)
    rows = [{
        "phase": "before_evict", "sessions_held": n, "disconnected_held": len(gone),
        "kv_bytes_held": held_before, "kv_bytes_expected": expected,
        "allocated_bytes": alloc_before, "freed_bytes": 0, "allocator_freed_bytes": None,
        "free_bytes": free_before, "free_source": free_src, "mean_session_bytes": mean,
        "sessions_fit": None if free_before is None else n + int(free_before // mean),
        "capacity_if_full": 1.0,
    }]
    for i in sorted(gone):
        caches[i] = None
    gc.collect()
    held_after = sum(b for i, b in enumerate(per_session) if i not in gone)
    alloc_after = _allocated(ctx)
    free_after, _ = _free(ctx)
    freed = held_before - held_after
    # Sessions that fit: the live ones plus new ones of the mean size in the memory free before plus what
    # the eviction returned (the CPU's MemAvailable is too noisy a counter to see a few MB come back).
    rows.append({
        "phase": "after_evict", "sessions_held": n - len(gone), "disconnected_held": 0,
        "kv_bytes_held": held_after, "kv_bytes_expected": None,
        "allocated_bytes": alloc_after, "freed_bytes": freed,
        "allocator_freed_bytes": None if alloc_before is None else alloc_before - alloc_after,
        "free_bytes": free_after, "free_source": free_src, "mean_session_bytes": mean,
        "sessions_fit": None if free_before is None else (n - len(gone)) + int((free_before + freed) // mean),
        "capacity_if_full": held_before / held_after if held_after else None,
    })
    return rows
