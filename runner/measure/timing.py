"""The one timing harness every timed experiment uses. `time_fn(fn, device)` and
`time_interleaved({name: fn}, device)` return a `Timing` per variant: median with p25/p75 and n of the device
time, the host time per call beside it, and the share of samples whose dispatch was hidden. On a GPU a sample
is the device's busy time, host dispatch hidden behind a short device-side wait.
Method: docs/methods/timing.md."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

WIDE_SPREAD = 0.25  # IQR / median above this: flag the measurement
LEAD_FLOOR_MS = 0.05  # the shortest device-side lead: covers the launch of the first timed kernel
LEAD_CAP_MS = 250.0  # never sleep longer than this; a slower dispatch is recorded as not hidden
LEAD_FACTOR = 1.5  # lead = this x the slowest dispatch seen in the warm-up, + LEAD_FLOOR_MS


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float
    n: int
    # Host wall time per call (a GPU's dispatch time; on the CPU the same samples as the device time).
    host: "Timing | None" = None
    # Share of the samples whose dispatch finished while the device-side lead still ran (GPU only).
    dispatch_hidden: float | None = None

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

    def host_columns(self, prefix: str = "") -> dict:
        """The host wall time per call (median, p25, p75) and whether dispatch stayed out of the device
        time (NULL on the CPU, where there is nothing to hide)."""
        h = self.host or self
        return {f"{prefix}host_ms": h.median_ms, f"{prefix}host_p25_ms": h.p25_ms,
                f"{prefix}host_p75_ms": h.p75_ms,
                f"{prefix}dispatch_hidden": None if self.dispatch_hidden is None else self.dispatch_hidden >= 0.95}


def summarize(samples_ms: list[float]) -> Timing:
    """Median, p25, p75 (inclusive quartiles from 4 samples up; min and max below that), min, max, n."""
    if not samples_ms:
        raise ValueError("no samples")
    s = sorted(samples_ms)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4, method="inclusive")
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = s[0], s[-1]
    return Timing(statistics.median(s), p25, p75, s[0], s[-1], len(s))


def summarize_calls(device_ms: list[float], host_ms: list[float], hidden: list[bool] | None = None) -> Timing:
    """A Timing of the device samples carrying the host samples' Timing and the hidden-dispatch share."""
    t = summarize(device_ms)
    share = sum(hidden) / len(hidden) if hidden else None
    return Timing(t.median_ms, t.p25_ms, t.p75_ms, t.min_ms, t.max_ms, t.n, summarize(host_ms), share)


def gbs(nbytes: int | float, ms: float) -> float:
    """GB/s (10^9 bytes per second) of `nbytes` moved in `ms` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def _is_cuda(device) -> bool:
    return getattr(device, "type", str(device)).startswith("cuda")


_CYCLES_PER_MS: dict[str, float] = {}


class _Clock:
    """Times one call on the right clock for the device; see the module docstring for the GPU method."""

    def __init__(self, device, cuda=None, now: Callable[[], float] = time.perf_counter):
        """`cuda` and `now` stand for torch.cuda and the host clock (a test passes a simulated device's)."""
        self.gpu = _is_cuda(device)
        self.device = device
        self.lead_ms = LEAD_FLOOR_MS
        self._cuda = torch.cuda if cuda is None else cuda
        self._now = now
        # The real device's cycles per ms is shared by every clock of the run; a simulated one calibrates alone.
        self._calibrated = _CYCLES_PER_MS if cuda is None else {}
        if self.gpu:
            self._cycles_per_ms = self._calibrate()

    def _calibrate(self) -> float:
        """SM clock cycles per millisecond of torch.cuda._sleep, measured once per device with events."""
        key = str(self.device)
        if key not in self._calibrated:
            cycles = 2_000_000
            with self._cuda.device(self.device):
                self._cuda._sleep(1000)  # load the kernel
                start, end = self._cuda.Event(enable_timing=True), self._cuda.Event(enable_timing=True)
                best = float("inf")
                for _ in range(3):
                    self._cuda.synchronize()
                    start.record()
                    self._cuda._sleep(cycles)
                    end.record()
                    self._cuda.synchronize()
                    best = min(best, float(start.elapsed_time(end)))
            self._calibrated[key] = cycles / max(best, 1e-3)
        return self._calibrated[key]

    def learn(self, host_ms: float) -> None:
        """Warm-up: grow the device-side lead to cover the slowest dispatch seen."""
        self.lead_ms = min(LEAD_CAP_MS, max(self.lead_ms, LEAD_FACTOR * host_ms + LEAD_FLOOR_MS))

    def measure(self, fn: Callable[[], object]) -> tuple[float, float, bool | None]:
        """(device ms, host ms, dispatch hidden or None on the CPU) of one call of fn."""
        if not self.gpu:
            t0 = self._now()
            fn()
            ms = (self._now() - t0) * 1e3
            return ms, ms, None
        with self._cuda.device(self.device):
            lead_start = self._cuda.Event(enable_timing=True)
            start = self._cuda.Event(enable_timing=True)
            end = self._cuda.Event(enable_timing=True)
            self._cuda.synchronize()
            queued = self._now()
            lead_start.record()
            cycles = max(1, int(self.lead_ms * self._cycles_per_ms))
            self._cuda._sleep(cycles)
            start.record()
            t0 = self._now()
            fn()
            t1 = self._now()
            end.record()
            self._cuda.synchronize()
            lead_ms = float(lead_start.elapsed_time(start))
            if lead_ms > 0.01:  # SM clocks ramp and throttle: re-learn cycles per ms from every sleep
                self._cycles_per_ms = cycles / lead_ms
            # The sleep began no earlier than it was queued, so if the host was done before `lead_ms` had
            # passed since then, the device was still sleeping when the last timed kernel was queued.
            hidden = (t1 - queued) * 1e3 < lead_ms
            return float(start.elapsed_time(end)), (t1 - t0) * 1e3, hidden


def time_fn(fn: Callable[[], object], device, *, warmup: int = 3, repeats: int = 20,
            setup: Callable[[], object] | None = None) -> Timing:
    """Median-of-repeats timing of `fn`. `setup` runs untimed before each call (e.g. reset a cache)."""
    return time_interleaved({"fn": fn}, device, warmup=warmup, repeats=repeats,
                            setup=None if setup is None else (lambda _name: setup()))["fn"]


def time_interleaved(variants: dict[str, Callable[[], object]], device, *, warmup: int = 3,
                     repeats: int = 20, setup: Callable[[str], object] | None = None) -> dict[str, Timing]:
    """Time several variants A B C A B C ... in one process; returns one Timing per variant."""
    clocks = {k: _Clock(device) for k in variants}  # one lead per variant: dispatch costs differ
    dev: dict[str, list[float]] = {k: [] for k in variants}
    host: dict[str, list[float]] = {k: [] for k in variants}
    hidden: dict[str, list[bool]] = {k: [] for k in variants}
    for i in range(max(1, warmup) + repeats):
        for name, fn in variants.items():
            if setup is not None:
                setup(name)
            d, h, hid = clocks[name].measure(fn)
            if i < max(1, warmup):
                clocks[name].learn(h)
                continue
            dev[name].append(d)
            host[name].append(h)
            if hid is not None:
                hidden[name].append(hid)
    return {k: summarize_calls(dev[k], host[k], hidden[k] or None) for k in variants}
