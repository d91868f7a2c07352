"""Every probe of memory and device state, in one place: the host's memory (/proc/meminfo, sysconf), the
CUDA caching allocator's counters, free device memory, the last-level cache (and the flush that empties
it before a timed call), and NVML's clocks, power, temperature and throttle reasons. Experiments and the
environment card read through here.

pynvml is imported inside `nvml()`: it is the optional [gpu] extra. Nothing here changes a setting: NVML
is only read.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import torch

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
# A footprint under FLUSH_FACTOR x the last-level cache is flushed before each timed call; DRAM claims need
# at least that many bytes moved.
FLUSH_FACTOR = 4
# The most of a CPU's last-level cache kvreport counts. Every flush buffer (FLUSH_FACTOR x LLC) and every
# "DRAM-sized" test point is a multiple of the LLC, and a virtual machine may report its host's whole cache:
# a 2-core VM this project ran on reported 480 MiB, which made 2 GiB flush buffers, 4 GiB roof points and a
# 9 GB peak on a machine whose two vCPUs share that cache with every other guest. With the cap a flush
# writes at most 256 MiB. Rows store the LLC figure they used (llc_bytes), so `dram_sized` is always
# "at least 4 x the counted LLC", and a capped host says so in device_ceilings' summary.
CPU_LLC_CAP = 64 * MIB
CPU_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")

# torch.cuda.memory_stats keys by the names kvreport stores them under.
ALLOCATOR_STATS = {
    "allocated_bytes": "allocated_bytes.all.current",
    "reserved_bytes": "reserved_bytes.all.current",
    "inactive_split_bytes": "inactive_split_bytes.all.current",
    "num_alloc_retries": "num_alloc_retries",
}


# --- the host ---------------------------------------------------------------------------------------

def host_available() -> tuple[int | None, str | None]:
    """(bytes, where they came from): MemAvailable from /proc/meminfo (what the kernel can hand out
    without swapping), else the available physical pages, else (None, None)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable of this host now (/proc/meminfo)"
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"), "available physical pages of this host now"
    except (ValueError, OSError, AttributeError):
        return None, None


def host_available_bytes() -> int | None:
    return host_available()[0]


def host_total_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# --- the CUDA caching allocator ---------------------------------------------------------------------

class CudaAllocator:
    """The CUDA caching allocator's counters for one device (synchronised first, so pending frees count)."""
    source = "cuda_allocator"

    def __init__(self, device):
        self.device = device

    def allocated(self) -> int:
        torch.cuda.synchronize(self.device)
        return int(torch.cuda.memory_allocated(self.device))

    def reserved(self) -> int:
        return int(torch.cuda.memory_reserved(self.device))

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def peak(self) -> int:
        return int(torch.cuda.max_memory_allocated(self.device))

    def peak_reserved(self) -> int:
        return int(torch.cuda.max_memory_reserved(self.device))

    def idle_reserved(self) -> int:
        """Reserved by the allocator but holding no tensor: reusable without asking the driver."""
        return self.reserved() - int(torch.cuda.memory_allocated(self.device))

    def stats(self) -> dict[str, int]:
        """ALLOCATOR_STATS, read from torch.cuda.memory_stats."""
        torch.cuda.synchronize(self.device)
        s = torch.cuda.memory_stats(self.device)
        return {k: int(s.get(v, 0)) for k, v in ALLOCATOR_STATS.items()}

    def expandable_segments(self) -> tuple[int, int] | None:
        """(count, bytes) of the allocator's expandable segments now, or None where this torch's
        snapshot does not say which segments are expandable."""
        segments = torch.cuda.memory_snapshot()
        flagged = [s for s in segments if "is_expandable" in s]
        if not flagged:
            return None
        mine = [s for s in flagged if s["is_expandable"]]
        return len(mine), int(sum(s.get("total_size", 0) for s in mine))


def cuda_free_bytes(device) -> tuple[int, int]:
    """(free, total) device memory as the driver reports it (cudaMemGetInfo)."""
    free, total = torch.cuda.mem_get_info(device)
    return int(free), int(total)


# --- the last-level cache -----------------------------------------------------------------------------

def last_level_cache_bytes(device, cpu_cache_dir: Path = CPU_CACHE_DIR) -> int:
    """L2 of a GPU (from its properties), or the largest cache level of CPU 0 (from sysfs: `cpu_cache_dir`
    holds one index*/size file per level) capped at CPU_LLC_CAP; 32 MiB where nothing is readable."""
    if device.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * MIB)
    return min(reported_cpu_cache_bytes(cpu_cache_dir), CPU_LLC_CAP)


def reported_cpu_cache_bytes(cpu_cache_dir: Path = CPU_CACHE_DIR) -> int:
    """The largest cache level sysfs reports for CPU 0, uncapped; 32 MiB where nothing is readable."""
    best = 0
    try:
        for f in Path(cpu_cache_dir).glob("index*/size"):
            text = f.read_text().strip().upper()
            mult = {"K": KIB, "M": MIB}.get(text[-1], 1)
            best = max(best, int(text.rstrip("KM")) * mult)
    except (OSError, ValueError):
        pass
    return best or 32 * MIB


class Flusher:
    """Overwrites a buffer FLUSH_FACTOR x the last-level cache before a timed call (untimed), so a small
    workload is read from DRAM, not from the cache a previous repeat left warm. `llc` defaults to the
    device's own last-level cache."""

    def __init__(self, device, llc: int | None = None):
        self.llc = last_level_cache_bytes(device) if llc is None else llc
        self.buf = torch.empty(FLUSH_FACTOR * self.llc // 4, dtype=torch.float32, device=device)

    def needed(self, footprint: int) -> bool:
        return footprint < FLUSH_FACTOR * self.llc

    def __call__(self, *_args) -> None:
        self.buf.zero_()


# --- NVML -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def nvml():
    """pynvml, initialised, or None when the package, the driver library or the permission is missing."""
    try:
        import pynvml
    except ImportError:
        yield None
        return
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver library, no permission
        yield None
        return
    try:
        yield pynvml
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def nvml_handle(pynvml, device):
    """The NVML handle of the torch device. NVML numbers GPUs ignoring CUDA_VISIBLE_DEVICES, so match by
    UUID where torch exposes it, and fall back to the index only when nothing remaps devices."""
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


def nvml_driver_version() -> str | None:
    with nvml() as pynvml:
        if pynvml is None:
            return None
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001
            return None
        return v.decode() if isinstance(v, bytes) else v


# Clock-event ("throttle") reason bits, by NVML's names; read from pynvml where it has them.
THROTTLE_NAMES = {
    "nvmlClocksThrottleReasonGpuIdle": "gpu_idle",
    "nvmlClocksThrottleReasonApplicationsClocksSetting": "applications_clocks",
    "nvmlClocksThrottleReasonSwPowerCap": "sw_power_cap",
    "nvmlClocksThrottleReasonHwSlowdown": "hw_slowdown",
    "nvmlClocksThrottleReasonSyncBoost": "sync_boost",
    "nvmlClocksThrottleReasonSwThermalSlowdown": "sw_thermal",
    "nvmlClocksThrottleReasonHwThermalSlowdown": "hw_thermal",
    "nvmlClocksThrottleReasonHwPowerBrakeSlowdown": "hw_power_brake",
    "nvmlClocksThrottleReasonDisplayClockSetting": "display_clock",
}


def throttle_names(pynvml, mask: int) -> str:
    """The active reasons of an NVML clock-event mask, comma-separated ('none' for 0)."""
    names = [name for attr, name in THROTTLE_NAMES.items() if mask & int(getattr(pynvml, attr, 0) or 0)]
    known = 0
    for attr in THROTTLE_NAMES:
        known |= int(getattr(pynvml, attr, 0) or 0)
    if mask & ~known:
        names.append(f"other(0x{mask & ~known:x})")
    return ",".join(names) or "none"


@dataclass(frozen=True)
class DeviceState:
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    power_w: float | None
    temp_c: int | None
    throttle_reasons: str | None

    def row(self, experiment: str, moment: str) -> dict:
        return {"experiment": experiment, "moment": moment, "sm_clock_mhz": self.sm_clock_mhz,
                "mem_clock_mhz": self.mem_clock_mhz, "power_w": self.power_w, "temp_c": self.temp_c,
                "throttle_reasons": self.throttle_reasons}


def read_device_state(pynvml, handle) -> DeviceState:
    """One reading of a handle; each field is None where this NVML or device does not report it."""
    def get(fn, *args):
        try:
            return fn(handle, *args)
        except Exception:  # noqa: BLE001 - not supported on this device / NVML version
            return None

    power_mw = get(pynvml.nvmlDeviceGetPowerUsage)
    reasons = (getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
               or getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
    mask = get(reasons) if reasons is not None else None
    return DeviceState(
        sm_clock_mhz=get(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
        mem_clock_mhz=get(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        temp_c=get(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU),
        throttle_reasons=throttle_names(pynvml, int(mask)) if mask is not None else None,
    )


def device_state(device) -> DeviceState | None:
    """The GPU's clocks, power, temperature and throttle reasons now, through NVML; None on a CPU or
    where NVML is not available (nvidia-ml-py is the optional [gpu] extra)."""
    if getattr(device, "type", "cpu") != "cuda":
        return None
    with nvml() as pynvml:
        if pynvml is None:
            return None
        try:
            handle = nvml_handle(pynvml, device)
        except Exception:  # noqa: BLE001 - a MIG slice or a remapped device NVML cannot find
            return None
        return None if handle is None else read_device_state(pynvml, handle)
