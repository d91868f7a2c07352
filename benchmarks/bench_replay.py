"""Replay benchmark: requests per second of runner/replay's prefix cache against a plain dictionary LRU loop
over the same blocks, and the wall time of a whole capacity sweep (`kvreport replay`'s passes).

    python benchmarks/bench_replay.py [TRACE] [--capacity-tokens 5120000] [--repeats 3]

TRACE defaults to the shared Mooncake conversation trace, else the tests' slice of it. Both loops replay
requests already parsed and mapped to blocks (parsing is timed apart), at one pool size; the plain loop is
the textbook OrderedDict LRU (move_to_end on a hit, popitem at the front when full) with no requests
holding blocks, no output blocks, no admission check, so it is a floor for any engine-faithful replay.
Ratio = replay requests/s / plain requests/s (1.0: as fast as the loop that ignores the engine's rules).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import OrderedDict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parents[1] / "shared" / "traces" / "mooncake" / "conversation_trace.jsonl"
SLICE = ROOT / "tests" / "fixtures" / "traces" / "mooncake_conversation_slice.jsonl"


def plain_lru(rows, capacity_blocks: int) -> float:
    """Token-weighted hit rate of a plain OrderedDict LRU over the same units (32 engine blocks each)."""
    cache: OrderedDict[int, None] = OrderedDict()
    hit = total = 0
    for _, units, unit_tokens, size, input_tokens, _, _ in rows:
        n = 0
        for u in units:
            if u in cache:
                n += 1
            else:
                break
        for u in units:
            if u in cache:
                cache.move_to_end(u)
            else:
                cache[u] = None
        while len(cache) * size > capacity_blocks:
            cache.popitem(last=False)
        hit += input_tokens if n == len(units) else n * unit_tokens
        total += input_tokens
    return hit / total


def main(argv=None) -> int:
    from kvreport.runner.replay.cache import PrefixCache
    from kvreport.runner.replay.sweep import KVPool, Setup, _requests, replay

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path, default=SHARED if SHARED.exists() else SLICE)
    ap.add_argument("--capacity-tokens", type=int, default=5_120_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    pool = KVPool(blocks_per_group=166_719, block_bytes_per_rank=655_360, block_bytes_host=5_242_880,
                  basis="llama-3.1-70b on H200 at TP 8, as `kvreport replay` finds it")
    setup = Setup([args.trace], pool, tp=8)
    t = time.perf_counter()
    rows, _ = _requests(setup, "read", None)
    rows = list(rows)
    parse_s = time.perf_counter() - t
    n = len(rows)
    blocks = args.capacity_tokens // 16
    print(f"{args.trace}: {n:,} requests, {sum(len(r[1]) for r in rows):,} block references; "
          f"read and mapped in {parse_s:.2f} s ({n / parse_s:,.0f} requests/s)")

    def timed(fn) -> float:
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return best

    def ours():
        p = PrefixCache(blocks)
        for row in rows:
            p.request(*row)
        ours.rate = p.hit_rate

    plain_s = timed(lambda: setattr(plain_lru, "rate", plain_lru(rows, blocks)))
    ours_s = timed(ours)
    print(f"pool of {args.capacity_tokens:,} tokens: replay {n / ours_s:,.0f} requests/s "
          f"(hit rate {ours.rate:.4f}), plain dict LRU {n / plain_s:,.0f} requests/s (hit rate {plain_lru.rate:.4f}); "
          f"ratio {plain_s / ours_s:.2f}")
    t, cpu = time.perf_counter(), time.process_time()
    r = replay(Setup([args.trace], pool, tp=8, capacity_tokens=[1_536_000, 5_120_000]))
    sweep_s, sweep_cpu = time.perf_counter() - t, time.process_time() - cpu
    pools = len(r["curve"]) + len(r["ttl"]) + 1
    print(f"full sweep: {pools} pools (ceiling, 2 TTL, {len(r['curve'])} capacities) in {r['passes']} passes, "
          f"{sweep_s:.1f} s wall, {sweep_cpu:.1f} s CPU; ceiling {r['ceiling_hit_rate']:.4f}, {r['gpus_for_target']} GPUs for "
          f"{r['target']:.0%} of it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
