"""The one timing harness every timed experiment uses.

- GPU: a CUDA event pair around each repeat (synchronised before reading), so host jitter and launch
  queueing outside the region do not count. CPU: time.perf_counter around a synchronous call.
- Warm-up repeats first (allocator growth, cuBLAS heuristics, lazy init), then `repeats` timed ones.
- Stored as median with p25/p75 and n; a result whose IQR is wider than WIDE_SPREAD of its median is
  flagged `wide` so pages can say the number is noisy instead of pretending it is exact.
- `time_interleaved` runs variants A B A B ... in one process, so drift (clocks, thermals, other tenants)
  hits all of them alike.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Callable

WIDE_SPREAD = 0.25  # IQR / median above this: flag the measurement


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float
    n: int

    @property
    def iqr_ms(self) -> float:
        return self.p75_ms - self.p25_ms

    @property
    def rel_spread(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def wide(self) -> bool:
        return self.rel_spread > WIDE_SPREAD

    def columns(self, prefix: str = "") -> dict:
        """Columns for a results row: time_ms (median), p25/p75, n and the spread flag."""
        return {
            f"{prefix}time_ms": self.median_ms,
            f"{prefix}p25_ms": self.p25_ms,
            f"{prefix}p75_ms": self.p75_ms,
            f"{prefix}n": self.n,
            f"{prefix}spread_wide": self.wide,
        }

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(samples_ms: list[float]) -> Timing:
    if not samples_ms:
        raise ValueError("no samples")
    s = sorted(samples_ms)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4, method="inclusive")
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = s[0], s[-1]
    return Timing(statistics.median(s), p25, p75, s[0], s[-1], len(s))


def _is_cuda(device) -> bool:
    return getattr(device, "type", str(device)).startswith("cuda")


class _Clock:
    """Starts/stops one timed region on the right clock for the device."""

    def __init__(self, device):
        self.cuda = _is_cuda(device)
        self.device = device
        if self.cuda:
            import torch

            self._torch = torch

    def measure(self, fn: Callable[[], object]) -> float:
        if self.cuda:
            torch = self._torch
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(self.device)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(self.device)
            return float(start.elapsed_time(end))
        import time

        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3


def time_fn(fn: Callable[[], object], device, *, warmup: int = 3, repeats: int = 20,
            setup: Callable[[], object] | None = None) -> Timing:
    """Median-of-repeats timing of `fn`. `setup` runs untimed before each call (e.g. reset a cache)."""
    clock = _Clock(device)
    samples = []
    for i in range(warmup + repeats):
        if setup is not None:
            setup()
        ms = clock.measure(fn)
        if i >= warmup:
            samples.append(ms)
    return summarize(samples)


def time_interleaved(variants: dict[str, Callable[[], object]], device, *, warmup: int = 3,
                     repeats: int = 20, setup: Callable[[str], object] | None = None) -> dict[str, Timing]:
    """Time several variants A B C A B C ... in one process; returns one Timing per variant."""
    clock = _Clock(device)
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(warmup + repeats):
        for name, fn in variants.items():
            if setup is not None:
                setup(name)
            ms = clock.measure(fn)
            if i >= warmup:
                samples[name].append(ms)
    return {k: summarize(v) for k, v in samples.items()}
