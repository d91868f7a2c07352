"""The two ceilings every bandwidth kvreport reports is set against: the theoretical peak DRAM bandwidth
(`theoretical_peak`: NVML, else a table of known GPUs, none for CPUs) and the measured roofs of the same op
at the same size (`roof_for`, stored in the `roof_curve` table). GB here is 10^9 bytes, as in datasheets.
Method: docs/methods/ceilings.md."""
from __future__ import annotations

import re

import torch

from .probes import GIB, MIB, Flusher, cuda_free_bytes, nvml, nvml_handle
from .timing import gbs, time_fn

# (pattern on the device name, GB/s). Checked in order: the first match wins, so specific names come first.
# Word boundaries keep "L4" from matching "L40S" and "V100" from matching "V100S".
KNOWN_GPUS: list[tuple[str, float]] = [
    (r"\bH200\b", 4800.0),
    (r"\bH100\b.*\bPCIe\b", 2000.0),
    (r"\bH100\b", 3350.0),
    (r"\bA100\b.*\b80\s?GB\b", 2039.0),
    (r"\bA100\b", 1555.0),
    (r"\bL4\b", 300.0),
    (r"\bA10G\b", 600.0),
    (r"\bRTX 4090\b", 1008.0),
    (r"\bRTX 3090\b", 936.0),
    (r"\bRTX 2070\b", 448.0),
    (r"\bT4\b", 320.0),
    (r"\bV100\b", 900.0),
]

CPU_SOURCE = "none: no theoretical figure for CPUs"
ROOF_OPS = ("copy", "read")
OVER_ROOF = 1.05  # a bandwidth above 105% of its same-size roof is a measurement error, flagged as such


def table_peak(name: str) -> float | None:
    """Peak GB/s of a known GPU from its name, or None for a GPU not in the table."""
    for pattern, peak in KNOWN_GPUS:
        if re.search(pattern, name or "", flags=re.IGNORECASE):
            return peak
    return None


def nvml_peak(device, handle_of=nvml_handle) -> float | None:
    """Peak GB/s from NVML's max memory clock and bus width; None without NVML, a handle (`handle_of`
    finds the device's) or either figure."""
    with nvml() as pynvml:
        if pynvml is None:
            return None
        try:
            handle = handle_of(pynvml, device)
            if handle is None:
                return None
            mem_clock_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
            bus_width_bits = pynvml.nvmlDeviceGetMemoryBusWidth(handle)
        except Exception:  # noqa: BLE001 - old NVML without bus width, MIG slice, ...: use the table
            return None
        if not mem_clock_mhz or not bus_width_bits:
            return None
        return mem_clock_mhz * 1e6 * bus_width_bits * 2 / 8 / 1e9


def theoretical_peak(device, from_nvml=nvml_peak) -> tuple[float | None, str | None]:
    """(peak GB/s or None, where it came from: 'nvml' | 'table' | None | the CPU note). `from_nvml` reads
    the NVML figure (None where there is none)."""
    device = torch.device(device)
    if device.type != "cuda":
        return None, CPU_SOURCE
    gbs = from_nvml(device)
    if gbs:
        return gbs, "nvml"
    gbs = table_peak(torch.cuda.get_device_name(device))
    return (gbs, "table") if gbs else (None, None)


def default_copy_bytes(device) -> int:
    """Bytes per buffer: 2 GiB on a GPU when free memory allows (at least 1 GiB: 16x the largest L2 in
    the table), 256 MiB on the CPU (8x a 32 MiB LLC)."""
    if device.type != "cuda":
        return 256 * MIB
    free, _ = cuda_free_bytes(device)
    for nbytes in (2 * GIB, GIB):
        if 2 * nbytes <= 0.8 * free:  # source + destination, with room to spare
            return nbytes
    return max(64 * MIB, int(0.4 * free) // MIB * MIB)


def _bandwidths(moved: int, t) -> dict:
    # A shorter time is a higher bandwidth: the p25 of the time is the p75 of the bandwidth.
    return {"gbs": gbs(moved, t.median_ms), "p25_gbs": gbs(moved, t.p75_ms), "p75_gbs": gbs(moved, t.p25_ms)}


def measure_roof(device, op: str, nbytes: int, *, warmup: int = 3, repeats: int | None = None,
                 rounds: int = 3, flusher=None, warm: bool = False, timer=time_fn) -> dict:
    """One point of the roof curve: `op` 'copy' (device-to-device, `nbytes` = bytes read + written) or
    'read' (a streaming sum, `nbytes` = bytes read), timed by the shared harness (GPU samples exclude
    dispatch). The best median of `rounds` rounds: a roof is an upper bound, and noise (a neighbour on a
    shared host, a clock ramp) only ever slows a copy down, so the fastest sustained round is the ceiling.
    On the CPU torch's own threads do the work (copy_ and sum are parallel over torch.get_num_threads()),
    the same threads the experiments' gathers use, so a gather cannot beat its roof by using more cores.
    A footprint under FLUSH_FACTOR x LLC gets the same untimed cache flush as the experiments (`flusher`),
    unless `warm`: the roof for a workload that is itself timed warm (decode steps back to back, whose
    weights stay cached when they fit), so that both sides of the ratio see the same cache. `timer` is
    timing.time_fn's signature (a test passes fixed timings)."""
    device = torch.device(device)
    fn, moved = roof_kernel(device, op, nbytes)
    flusher = flusher or Flusher(device)
    flush = flusher.needed(moved) and not warm
    if repeats is None:
        repeats = 30 if device.type == "cuda" else 10
    timings = [timer(fn, device, warmup=warmup, repeats=repeats, setup=flusher if flush else None)
               for _ in range(max(1, rounds))]
    del fn
    return roof_row(device, op, nbytes, moved, timings, flusher.llc, flush, "alone")


def roof_kernel(device, op: str, nbytes: int):
    """(callable, bytes it moves): the roof's copy (`nbytes` read + written) or streaming sum (`nbytes`
    read) on fresh random float32 buffers; a workload can time it beside its own variants."""
    if op not in ROOF_OPS:
        raise ValueError(f"roof op {op!r}: expected one of {ROOF_OPS}")
    n = max(1, (nbytes // 2 if op == "copy" else nbytes) // 4)
    src = torch.empty(n, dtype=torch.float32, device=device).normal_()
    if op == "copy":
        dst = torch.empty_like(src)
        return (lambda: dst.copy_(src)), 2 * n * 4
    acc = torch.empty((), dtype=torch.float32, device=device)
    return (lambda: torch.sum(src, 0, out=acc)), n * 4


def roof_row(device, op: str, nbytes: int, moved: int, timings: list, llc: int, flushed: bool,
             measured_with: str) -> dict:
    """A roof_curve row from the timings of one or more rounds: the fastest round's median and quartiles."""
    t = min(timings, key=lambda x: x.median_ms)
    return {"op": op, "bytes": int(nbytes), **_bandwidths(moved, t), "n": t.n, "rounds": len(timings),
            "worst_round_gbs": gbs(moved, max(x.median_ms for x in timings)), "llc_bytes": llc,
            "flushed": flushed, "threads": torch.get_num_threads() if device.type != "cuda" else None,
            "host_ms": (t.host or t).median_ms, "measured_with": measured_with}


def record_roof(ctx, row: dict) -> None:
    """Keep a roof point an experiment measured itself (interleaved with its own variants), to be
    stored with its rows by new_roof_rows."""
    ctx.shared.setdefault("roof_curve", {})[(row["op"], row["bytes"], row["measured_with"])] = row


def measure_copy_roof(device, nbytes: int | None = None, *, warmup: int = 3, repeats: int | None = None,
                      rounds: int = 3, timer=time_fn) -> dict:
    """The headline copy roof: one large device-to-device copy of `nbytes` per buffer (bytes read +
    written over the best round's median), as stored in device_ceilings. `timer`: as in measure_roof."""
    device = torch.device(device)
    nbytes = int(nbytes or default_copy_bytes(device))
    r = measure_roof(device, "copy", 2 * (nbytes // 4) * 4, warmup=warmup, repeats=repeats, rounds=rounds,
                     timer=timer)
    return {"roof_gbs": r["gbs"], "roof_p25_gbs": r["p25_gbs"], "roof_p75_gbs": r["p75_gbs"],
            "roof_n": r["n"], "roof_bytes": r["bytes"], "roof_rounds": r["rounds"],
            "roof_worst_round_gbs": r["worst_round_gbs"]}


def roof_rounds(ctx) -> dict:
    """Repeats and rounds of a roof point: fewer on a CPU quick run, where each costs real seconds."""
    if ctx.is_cuda:
        return {"warmup": 3, "repeats": 30, "rounds": 3}
    return {"warmup": 1, "repeats": 5, "rounds": 2} if ctx.quick else {"warmup": 1, "repeats": 6, "rounds": 2}


def roof_for(ctx, op: str, nbytes: int, warm: bool = False) -> dict:
    """The roof-curve point (op, nbytes) of this run, measured on first use and kept in ctx.shared, so
    every pct_of_roof divides by the roof at the same size and op, measured once per run. `warm`: for a
    workload timed without a cache flush (see measure_roof)."""
    curve = ctx.shared.setdefault("roof_curve", {})
    key = (op, int(nbytes), warm)
    if key not in curve:
        ctx.progress(f"roof: {op} at {nbytes / MIB:,.2f} MiB{' (warm)' if warm else ''}")
        curve[key] = measure_roof(ctx.device, op, int(nbytes), warm=warm, flusher=Flusher(ctx.device, ctx.llc),
                                  **roof_rounds(ctx))
    return curve[key]


def pct_of_roof(ctx, op: str, nbytes: int, achieved_gbs: float, warm: bool = False) -> dict:
    """Columns for a bandwidth row: its same-size same-op roof, the share of it, and the >105% flag."""
    roof = roof_for(ctx, op, nbytes, warm)
    pct = achieved_gbs / roof["gbs"]
    return {"roof_gbs": roof["gbs"], "pct_of_roof": pct, "over_roof": pct > OVER_ROOF}


def new_roof_rows(ctx) -> list[dict]:
    """Roof-curve rows measured since the last call: each experiment stores the points it measured."""
    done = ctx.shared.setdefault("roof_curve_stored", set())
    fresh = {k: r for k, r in ctx.shared.get("roof_curve", {}).items() if k not in done}
    done.update(fresh)
    return list(fresh.values())


def roof_and_peak(ctx) -> tuple[float, float | None]:
    """(copy roof GB/s, peak GB/s or None) from ctx.shared, measuring the roof here when no earlier
    experiment published it (e.g. `kvreport run --only compaction`)."""
    if "copy_roof_gbs" not in ctx.shared:
        ctx.progress("measuring the copy roof (device_ceilings did not run)")
        ctx.shared["copy_roof_gbs"] = measure_copy_roof(ctx.device, 128 * MIB if ctx.quick and not ctx.is_cuda
                                                        else None)["roof_gbs"]
    if "peak_gbs" not in ctx.shared:
        ctx.shared["peak_gbs"] = theoretical_peak(ctx.device)[0]
    return ctx.shared["copy_roof_gbs"], ctx.shared["peak_gbs"]
