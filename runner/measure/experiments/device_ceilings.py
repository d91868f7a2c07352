"""Ceilings: the device's theoretical peak DRAM bandwidth, its headline copy roof, and the
roof curve (copy and read at every compaction size), stored with the run so every later bandwidth can be
shown as GB/s, % of peak and % of the same-size roof. Runs first (ORDER 1) and publishes the roofs in
ctx.shared; later experiments measure any further sizes they need through ceilings.roof_for."""
from __future__ import annotations

import torch

from . import Result, RunContext
from ..ceilings import ROOF_OPS, default_copy_bytes, measure_copy_roof, new_roof_rows, roof_for, theoretical_peak
from ..compaction import planned_workloads
from ..environment import _cpu_name
from ..probes import CPU_LLC_CAP, MIB, reported_cpu_cache_bytes

NAME = "device_ceilings"
GROUP = "cache"
ORDER = 1
TABLES = ("device_ceilings", "roof_curve")


def run(ctx: RunContext) -> Result:
    peak, source = theoretical_peak(ctx.device)
    # --quick on a CPU: 128 MiB buffers are still 4x a 32 MiB LLC and halve the time.
    nbytes = 128 * MIB if ctx.quick and not ctx.is_cuda else default_copy_bytes(ctx.device)
    ctx.progress(f"copy roof: {nbytes / MIB:,.0f} MiB device-to-device copy")
    roof = measure_copy_roof(ctx.device, nbytes)
    llc = ctx.llc
    name = torch.cuda.get_device_name(ctx.device) if ctx.is_cuda else f"cpu: {_cpu_name()}"
    row = {"device_name": name, "peak_gbs": peak, "peak_source": source, **roof, "buffer_bytes": nbytes,
           "roof_pct_of_peak": roof["roof_gbs"] / peak if peak else None, "llc_bytes": llc}
    ctx.shared["copy_roof_gbs"] = roof["roof_gbs"]
    ctx.shared["peak_gbs"] = peak
    # The curve at the compaction sizes (the other experiments add their own sizes as they run).
    for plan in planned_workloads(ctx):
        for op in ROOF_OPS:
            roof_for(ctx, op, plan.bytes_moved)
    curve = new_roof_rows(ctx)
    peak_txt = f"{peak:,.0f} GB/s peak ({source}), roof = {row['roof_pct_of_peak']:.0%} of it" if peak else \
        f"no theoretical peak ({source})"
    points = ", ".join(f"{r['op']} {r['bytes'] / MIB:,.2f} MiB {r['gbs']:,.1f}" for r in curve)
    return Result({"device_ceilings": [row], "roof_curve": curve}, [
        f"copy roof {roof['roof_gbs']:,.1f} GB/s (p25-p75 {roof['roof_p25_gbs']:,.1f}-{roof['roof_p75_gbs']:,.1f}, "
        f"n={roof['roof_n']}); {peak_txt}",
        f"roof curve (GB/s; last-level cache {llc / MIB:,.0f} MiB{_capped_note(ctx, llc)}): {points}"])


def _capped_note(ctx: RunContext, llc: int) -> str:
    """Where the host reports more cache than the cap (probes.CPU_LLC_CAP), the figure it reported."""
    if ctx.is_cuda or llc < CPU_LLC_CAP:
        return ""
    reported = reported_cpu_cache_bytes()
    return f", capped: the host reports {reported / MIB:,.0f} MiB" if reported > llc else ""
