"""Fragmentation: what the CUDA caching allocator keeps reserved after requests are evicted, default
allocator vs expandable segments."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis import charts
from kvreport.analysis.site import PageSpec, Table

from ._helpers import charts_per_run, skip_notes

PAGE = PageSpec(slug="fragmentation", title="Fragmentation", order=30)
EXPERIMENT = "fragmentation"
PHASES = ["admitted", "after_evict", "after_empty_cache"]


def memory_chart(run_id: int, rows: list[dict], label: str):
    series = {}
    for allocator in sorted({r["allocator"] for r in rows}):
        by_phase = {r["phase"]: r for r in rows if r["allocator"] == allocator}
        phases = [p for p in PHASES if p in by_phase]
        for col, what in (("allocated_bytes", "allocated"), ("reserved_bytes", "reserved")):
            series[f"{allocator} · {what}"] = (phases, [by_phase[p][col] / 2 ** 20 for p in phases])
    return charts.bars(
        f"fragmentation-memory-run{run_id}", series, f"Allocator memory before and after eviction · {label}",
        "Bytes allocated (held by live tensors) and reserved (held by the allocator) after admitting the "
        "requests, after evicting a random subset, and after empty_cache(), for the default allocator and "
        "expandable segments. The gap between a reserved bar and its allocated bar is memory kept but unused.",
        "phase", "MiB")


def pending(q, site) -> str | None:
    """Why this DB has no fragmentation data (the navigation marks the page GPU pending), or None."""
    if q("frag_phases"):
        return None
    return "no run in this DB measured fragmentation: the experiment needs the CUDA caching allocator"


@dataclass
class FragmentationPage:
    phases: list[dict]
    retention: list[dict]
    charts: list
    older_runs: int
    skips: list[dict]
    retention_table: Table | None  # both tables shown where a run measured fragmentation (None otherwise)
    phases_table: Table | None


def context(q, site) -> FragmentationPage:
    phases = q("frag_phases")
    chart_list, older_runs = charts_per_run(phases, memory_chart, site)
    retention = q("frag_retention")
    csv = site.csv_files.get
    return FragmentationPage(phases=phases, retention=retention, charts=chart_list,
                             retention_table=None if not phases else Table("fragmentation-retention", retention, [
                                 ("run_id", "run", "int"), ("device_name", "device", "text"),
                                 ("allocator", "allocator", "text"), ("n_requests", "requests", "int"),
                                 ("live_requests", "live after eviction", "int"),
                                 ("evicted_bytes", "evicted", "bytes"),
                                 ("reserved_after_evict", "reserved after eviction", "bytes"),
                                 ("allocated_after_evict", "allocated after eviction", "bytes"),
                                 ("retained_after_evict", "reserved − allocated", "bytes"),
                                 ("retained_over_evicted", "retained / evicted", "num2"),
                                 ("retained_after_empty_cache", "reserved − allocated after empty_cache", "bytes"),
                                 ("inactive_split_after_evict", "inactive split", "bytes"),
                                 ("num_alloc_retries", "alloc retries", "int"),
                                 ("setting_confirmed", "setting confirmed", "bool")],
                                 caption="Per run and allocator: memory kept reserved after eviction "
                                         "and after empty_cache()"),
                             phases_table=None if not phases else Table("fragmentation-phases", phases, [
                                 ("run_id", "run", "int"), ("allocator", "allocator", "text"),
                                 ("phase", "phase", "text"), ("allocated_bytes", "allocated", "bytes"),
                                 ("reserved_bytes", "reserved", "bytes"),
                                 ("retained_bytes", "reserved − allocated", "bytes"),
                                 ("inactive_split_bytes", "inactive split", "bytes"),
                                 ("num_alloc_retries", "alloc retries", "int"),
                                 ("live_requests", "live requests", "int"), ("evicted_bytes", "evicted", "bytes")],
                                 caption="Allocator counters per phase", csv=csv("fragmentation")),
                             older_runs=older_runs, skips=skip_notes(q, EXPERIMENT))
