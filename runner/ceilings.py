"""The two ceilings every bandwidth kvreport reports is set against.

- Theoretical peak DRAM bandwidth: NVML's max memory clock x bus width x 2 (double data rate) / 8, which
  gives the datasheet figure for HBM and GDDR alike (H100 SXM: 2619 MHz x 5120 bit -> 3.35 TB/s; RTX 2070:
  7001 MHz x 256 bit -> 448 GB/s). Without NVML, a table of known GPUs. CPUs get no theoretical figure:
  DIMM population and channel count are not visible from here, so none is invented.
- Measured copy roof: one large device-to-device copy, bytes read + bytes written over the median time.
  The buffers are far larger than the last-level cache (H200 L2: 60 MB), so it measures DRAM.
GB here is 10^9 bytes, as in datasheets.
"""
from __future__ import annotations

import os
import re

from .timing import time_fn

GIB = 1 << 30
MIB = 1 << 20

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


def table_peak(name: str) -> float | None:
    """Peak GB/s of a known GPU from its name, or None for a GPU not in the table."""
    for pattern, gbs in KNOWN_GPUS:
        if re.search(pattern, name or "", flags=re.IGNORECASE):
            return gbs
    return None


def _nvml_handle(pynvml, device):
    """The NVML handle of the torch device. NVML numbers GPUs ignoring CUDA_VISIBLE_DEVICES, so match by
    UUID where torch exposes it, and fall back to the index only when nothing remaps devices."""
    import torch

    props = torch.cuda.get_device_properties(device)
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid:
        for candidate in (uuid, uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"):
            try:
                return pynvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception:  # noqa: BLE001 - wrong spelling of the UUID: try the next
                continue
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
    return None


def nvml_peak(device) -> float | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver library, no permission: use the table
        return None
    try:
        handle = _nvml_handle(pynvml, device)
        if handle is None:
            return None
        mem_clock_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        bus_width_bits = pynvml.nvmlDeviceGetMemoryBusWidth(handle)
        if not mem_clock_mhz or not bus_width_bits:
            return None
        return mem_clock_mhz * 1e6 * bus_width_bits * 2 / 8 / 1e9
    except Exception:  # noqa: BLE001 - old NVML without bus width, MIG slice, ...: use the table
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def theoretical_peak(device) -> tuple[float | None, str | None]:
    """(peak GB/s or None, where it came from: 'nvml' | 'table' | None | the CPU note)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None, CPU_SOURCE
    gbs = nvml_peak(device)
    if gbs:
        return gbs, "nvml"
    gbs = table_peak(torch.cuda.get_device_name(device))
    return (gbs, "table") if gbs else (None, None)


def default_copy_bytes(device) -> int:
    """Bytes per buffer: 2 GiB on a GPU when free memory allows (at least 1 GiB: 16x the largest L2 in
    the table), 256 MiB on the CPU (8x a 32 MiB LLC)."""
    import torch

    if device.type != "cuda":
        return 256 * MIB
    free, _ = torch.cuda.mem_get_info(device)
    for nbytes in (2 * GIB, GIB):
        if 2 * nbytes <= 0.8 * free:  # source + destination, with room to spare
            return nbytes
    return max(64 * MIB, int(0.4 * free) // MIB * MIB)


def measure_copy_roof(device, nbytes: int | None = None, *, warmup: int = 3, repeats: int | None = None,
                      rounds: int = 3) -> dict:
    """Device-to-device copy bandwidth (bytes read + written): the best median of `rounds` separate
    rounds, with that round's p25/p75 and n. A roof is an upper bound and noise (a neighbour on a shared
    host, a clock ramp) only ever slows a copy down, so the fastest sustained round is the ceiling; one
    unlucky round must not make every later "% of roof" look better than it is."""
    import torch

    device = torch.device(device)
    nbytes = int(nbytes or default_copy_bytes(device))
    n = nbytes // 4
    src = torch.empty(n, dtype=torch.float32, device=device).normal_()
    dst = torch.empty_like(src)
    if repeats is None:
        repeats = 30 if device.type == "cuda" else 10
    timings = [time_fn(lambda: dst.copy_(src), device, warmup=warmup, repeats=repeats)
               for _ in range(max(1, rounds))]
    t = min(timings, key=lambda x: x.median_ms)
    moved = 2 * n * 4
    del src, dst

    def gbs(ms):
        return moved / (ms * 1e-3) / 1e9

    # A shorter time is a higher bandwidth: the p25 of the time is the p75 of the bandwidth.
    return {"roof_gbs": gbs(t.median_ms), "roof_p25_gbs": gbs(t.p75_ms), "roof_p75_gbs": gbs(t.p25_ms),
            "roof_n": t.n, "roof_bytes": moved,
            "roof_rounds": len(timings), "roof_worst_round_gbs": gbs(max(x.median_ms for x in timings))}


def roof_and_peak(ctx) -> tuple[float, float | None]:
    """(copy roof GB/s, peak GB/s or None) from ctx.shared, measuring the roof here when no earlier
    experiment published it (e.g. `kvreport run --only kv_compact_v2`)."""
    if "copy_roof_gbs" not in ctx.shared:
        ctx.progress("measuring the copy roof (device_ceilings did not run)")
        ctx.shared["copy_roof_gbs"] = measure_copy_roof(ctx.device, 128 * MIB if ctx.quick and not ctx.is_cuda
                                                        else None)["roof_gbs"]
    if "peak_gbs" not in ctx.shared:
        ctx.shared["peak_gbs"] = theoretical_peak(ctx.device)[0]
    return ctx.shared["copy_roof_gbs"], ctx.shared["peak_gbs"]
